//! `ishmrun`'s command line and messages as a user sees them: options and
//! their spellings, errors and their exit statuses, program lookup, and the
//! behaviour under another launcher. The multi-PE suite covers running real
//! PE programs.

use assert_cmd::Command;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The launcher with no other launcher's variables in its environment.
fn ishmrun() -> Command {
    let mut c = Command::cargo_bin("ishmrun").expect("the ishmrun binary");
    for v in ["OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID"] {
        c.env_remove(v);
    }
    c.timeout(std::time::Duration::from_secs(60));
    c
}

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(c: &mut Command) -> Out {
    let o = c.output().expect("run ishmrun");
    Out {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// A shell script `name` in `dir` (executable).
fn script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn usage_help_and_version() {
    let o = run(&mut ishmrun());
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("usage: ishmrun -n N"), "{}", o.stderr);

    let o = run(ishmrun().arg("--help"));
    assert_eq!(o.code, Some(0));
    for want in ["examples:", "mpiexec -n N ishmrun program", "ISHMEM_SYMMETRIC_SIZE", "--npes=N"] {
        assert!(o.stdout.contains(want), "--help lacks {want:?}:\n{}", o.stdout);
    }
    let o = run(ishmrun().arg("-V"));
    assert_eq!(o.code, Some(0));
    assert!(o.stdout.starts_with("ishmrun (ishmem-rs) "), "{}", o.stdout);
}

#[test]
fn bad_options_are_usage_errors() {
    for (args, want) in [
        (&["-n", "0", "x"][..], "bad PE count 0"),
        (&["-n", "four", "x"][..], "bad PE count \"four\""),
        (&["-t", "abc", "-n", "2", "x"][..], "bad timeout \"abc\""),
        (&["-t", "-5", "-n", "2", "x"][..], "bad timeout"),
        (&["--bogus", "x"][..], "unknown option \"--bogus\" (try --help)"),
        (&["-n"][..], "option -n needs a value"),
        (&["-n", "2"][..], "usage: ishmrun"),
    ] {
        let o = run(ishmrun().args(args));
        assert_eq!(o.code, Some(2), "ishmrun {args:?}: {}", o.stderr);
        assert!(o.stderr.contains(want), "ishmrun {args:?}: want {want:?} in:\n{}", o.stderr);
    }
}

#[test]
fn option_spellings() {
    let dir = tempfile::tempdir().unwrap();
    // Each PE writes a file named after its PE number; the program is not
    // an OpenSHMEM one, so ishmrun also notes that it never joined.
    let prog = script(dir.path(), "prog", "touch \"$(dirname \"$0\")/pe.$ISHMRUN_PE.$1\"");
    for (k, spelling) in
        [&["-n3"][..], &["-n", "3"], &["-np", "3"], &["--npes=3"], &["--npes", "3"], &["--np=3"]].iter().enumerate()
    {
        let o = run(ishmrun().args(*spelling).arg(&prog).arg(k.to_string()));
        assert_eq!(o.code, Some(0), "{spelling:?}: {}", o.stderr);
        assert!(o.stderr.contains("ended without joining the job"), "{spelling:?}: {}", o.stderr);
        let started = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(&format!(".{k}")))
            .count();
        assert_eq!(started, 3, "{spelling:?} started {started} PEs");
    }
}

#[test]
fn program_lookup() {
    let dir = tempfile::tempdir().unwrap();
    script(dir.path(), "here", "echo ran here");
    // In the current directory without ./, as a shell would not but users
    // expect; on PATH by name.
    let o = run(ishmrun().current_dir(dir.path()).args(["-n", "1", "here"]));
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("ran here"), "{}", o.stdout);
    let o = run(ishmrun().args(["-n", "1", "true"]));
    assert_eq!(o.code, Some(0), "{}", o.stderr);

    let o = run(ishmrun().current_dir(dir.path()).args(["-n", "2", "no_such_program_xyz"]));
    assert_ne!(o.code, Some(0));
    assert!(
        o.stderr.contains("cannot find program \"no_such_program_xyz\"") && o.stderr.contains("./no_such_program_xyz"),
        "{}",
        o.stderr
    );
}

#[test]
fn pe_exit_status_and_127_hint() {
    let dir = tempfile::tempdir().unwrap();
    let fails = script(dir.path(), "fails", "exit 3");
    let o = run(ishmrun().args(["-n", "2"]).arg(&fails));
    assert_eq!(o.code, Some(3), "{}", o.stderr);
    let missing = script(dir.path(), "missing", "exit 127");
    let o = run(ishmrun().args(["-n", "2"]).arg(&missing));
    assert_eq!(o.code, Some(127), "{}", o.stderr);
    assert!(o.stderr.contains("could not start") && o.stderr.contains("-Wl,-rpath"), "{}", o.stderr);
}

#[test]
fn timeout() {
    let dir = tempfile::tempdir().unwrap();
    let sleeps = script(dir.path(), "sleeps", "exec sleep 30");
    let start = std::time::Instant::now();
    let o = run(ishmrun().args(["-n", "2", "--timeout=0.5"]).arg(&sleeps));
    assert_eq!(o.code, Some(124), "{}", o.stderr);
    assert!(o.stderr.contains("did not finish within 0.5 s"), "{}", o.stderr);
    assert!(start.elapsed() < std::time::Duration::from_secs(20), "the timeout did not stop the job");
}

#[test]
fn under_another_launcher() {
    // Intel SHMEM's form: mpiexec -n 2 ishmrun ./prog runs the program as is.
    let o = run(ishmrun().env("OMPI_COMM_WORLD_SIZE", "2").args(["echo", "passed", "through"]));
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(o.stdout, "passed through\n");
    // -n as well would start a job per process: an error that says so.
    let o = run(ishmrun().env("OMPI_COMM_WORLD_SIZE", "2").args(["-n", "2", "echo"]));
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(
        o.stderr.contains("-n 2 under another launcher (OMPI_COMM_WORLD_SIZE is set")
            && o.stderr.contains("leave out -n"),
        "{}",
        o.stderr
    );
    let o = run(ishmrun().env("SLURM_PROCID", "0").args(["-n", "2", "echo"]));
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("SLURM_PROCID"), "{}", o.stderr);
}
