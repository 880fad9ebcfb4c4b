//! `ishmem-perf`: latency and bandwidth of ishmem-rs host-initiated
//! operations (Intel SHMEM's perf-test method: warm up until 2 ms have
//! passed, then 10 trials of a calibrated batch; best and median per
//! operation; PE 0 drives, PE n-1 is the target), and PNG charts from the
//! results.
//!
//! ```text
//! ishmrun -n 2 ishmem-perf run [--quick] [--coll] [--csv FILE] [--json FILE]
//! ishmem-perf plot --input FILE.csv [--input ...] --out DIR
//! ishmem-perf plot-scale --input LABEL=FILE.csv [--input ...] --out DIR
//! ishmem-perf plot-gpu --input LABEL=FILE.csv [--input ...] --out DIR
//! ```
//! `plot-gpu` draws the side-by-side GPU benchmark's CSVs
//! (`tests/cuda/bench-vs-nvshmem.sh`: ishmem-rs and NVSHMEM).
//! `--coll`: the many-PE set instead: every PE runs back-to-back calls and
//! a trial's figure is the largest per-PE time per call (`_max` figures):
//! barrier_all, team_sync, broadcast, collect, fcollect, alltoall and
//! sum_reduce (world team) at 8 bytes and 64 KiB, fetch_add by every PE to
//! PE 0, puts by every PE to the next with quiet (a ring).
//! CSV columns: figure,bytes,pes,best,median,unit (the same as the C
//! benchmark `packaging/bench/shmem_bench.c`, so both plot alike).

mod plot;

use ishmem::{Cmp, Ishmem, ReduceOp, SignalOp, SymmVec};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

const TRIALS: usize = 10;

#[derive(Clone, Debug)]
pub struct Row {
    pub figure: String,
    pub bytes: usize,
    pub pes: usize,
    pub best: f64,
    pub median: f64,
    pub unit: &'static str,
}

/// Who runs a figure's operation.
#[derive(Clone, Copy, PartialEq)]
enum Who {
    /// PE 0 alone (one-sided operations).
    Driver,
    /// PE 0 and PE n-1 (ping-pong).
    Pair,
    /// Every PE (collectives).
    All,
    /// Every PE; the figure is the largest per-PE time.
    AllMax,
}

struct Bench<'a> {
    shmem: &'a Ishmem,
    ctl: SymmVec<'a, i64>,
    /// Per-trial times, for the maximum over PEs.
    tmine: SymmVec<'a, f64>,
    tmax: SymmVec<'a, f64>,
    quick: bool,
    rows: Vec<Row>,
}

impl Bench<'_> {
    /// Runs `op(iters)` per the method; returns seconds per operation.
    fn measure(&mut self, figure: &str, bytes: usize, who: Who, unit: &'static str, op: &mut dyn FnMut(u64)) {
        let (me, n) = (self.shmem.my_pe(), self.shmem.n_pes());
        let runs = match who {
            Who::Driver => me == 0,
            Who::Pair => me == 0 || me == n - 1,
            Who::All | Who::AllMax => true,
        };
        // PE 0 decides every warm-up step and hands it to all PEs, so every
        // PE runs the same number of calls.
        let start = Instant::now();
        let mut iters: u64 = 1;
        let mut last = 0.0f64;
        let warm = if self.quick { 2e-4 } else { 2e-3 };
        loop {
            if me == 0 {
                if last > 0.0 && last < 2.5e-4 {
                    iters *= 2;
                }
                let more = i64::from(start.elapsed().as_secs_f64() < warm);
                for pe in 0..n {
                    self.ctl.put(0, &[more, iters as i64], pe);
                }
            }
            self.shmem.barrier_all();
            let (more, it) = (self.ctl.read_local_at(0), self.ctl.read_local_at(1) as u64);
            self.shmem.barrier_all();
            if more == 0 {
                iters = it;
                break;
            }
            let t0 = Instant::now();
            if runs {
                op(it);
            }
            last = t0.elapsed().as_secs_f64();
        }
        if self.quick {
            iters = iters.min(64);
        }
        let mut t = [0.0f64; TRIALS];
        for slot in t.iter_mut() {
            self.shmem.barrier_all();
            let t0 = Instant::now();
            if runs {
                op(iters);
            }
            *slot = t0.elapsed().as_secs_f64() / iters as f64;
        }
        self.shmem.barrier_all();
        if who == Who::AllMax {
            self.tmine.write_local(0, &t);
            let world = self.shmem.team_world();
            world.reduce(ReduceOp::Max, &self.tmax, &self.tmine, TRIALS);
            self.tmax.copy_local_to(0, &mut t);
        }
        let mut v: Vec<f64> = if unit == "MB/s" {
            t.iter().map(|s| bytes as f64 / s / 1e6).collect()
        } else {
            t.iter().map(|s| s * 1e6).collect()
        };
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let best = if unit == "MB/s" { v[TRIALS - 1] } else { v[0] };
        self.rows.push(Row { figure: figure.into(), bytes, pes: n, best, median: v[TRIALS / 2], unit });
    }
}

/// One-way latency of a cache-line transfer between two threads of this
/// process: the hardware limit the small-message figures are held to.
/// Measured only in 1-PE runs (with more PEs the threads would compete
/// with the other PEs for the cores). Returns (best, median) in us.
fn hw_cacheline_one_way(quick: bool) -> (f64, f64) {
    #[repr(align(128))]
    struct Line(AtomicU64);
    let a = Line(AtomicU64::new(0));
    let b = Line(AtomicU64::new(0));
    let iters: u64 = if quick { 2_000 } else { 200_000 };
    let mut t = Vec::with_capacity(TRIALS + 1);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 1..=iters * (TRIALS as u64 + 1) {
                while a.0.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
                b.0.store(i, Ordering::Release);
            }
        });
        let mut i = 0;
        for _ in 0..=TRIALS {
            let t0 = Instant::now();
            for _ in 0..iters {
                i += 1;
                a.0.store(i, Ordering::Release);
                while b.0.load(Ordering::Acquire) != i {
                    std::hint::spin_loop();
                }
            }
            t.push(t0.elapsed().as_secs_f64() / iters as f64 / 2.0 * 1e6);
        }
    });
    t.remove(0); // the first batch is the warm-up
    t.sort_by(|x, y| x.partial_cmp(y).unwrap());
    (t[0], t[TRIALS / 2])
}

fn run(args: &[String]) -> Result<(), String> {
    let quick = args.iter().any(|a| a == "--quick");
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let shmem = Ishmem::init().map_err(|e| e.to_string())?;
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let target = n - 1;
    let ctl = shmem.alloc::<i64>(2).map_err(|e| e.to_string())?;
    let tmine = shmem.alloc::<f64>(TRIALS).map_err(|e| e.to_string())?;
    let tmax = shmem.alloc::<f64>(TRIALS).map_err(|e| e.to_string())?;
    let mut b = Bench { shmem: &shmem, ctl, tmine, tmax, quick, rows: Vec::new() };
    if args.iter().any(|a| a == "--coll") {
        coll_set(&shmem, &mut b)?;
        return finish(&b, &value);
    }
    let maxb = 4 << 20;
    let src = shmem.alloc::<u8>(maxb * n).map_err(|e| e.to_string())?;
    let dst = shmem.alloc::<u8>(maxb * n).map_err(|e| e.to_string())?;
    let words = shmem.alloc::<u64>(8).map_err(|e| e.to_string())?;
    let sig = shmem.alloc::<u64>(2).map_err(|e| e.to_string())?;
    let mut local = vec![1u8; maxb];

    b.measure("put+quiet", 8, Who::Driver, "us", &mut |it| {
        for _ in 0..it {
            dst.put(0, &local[..8], target);
            shmem.quiet();
        }
    });
    b.measure("get", 8, Who::Driver, "us", &mut |it| {
        for _ in 0..it {
            src.get(0, &mut local[..8], target);
        }
    });
    b.measure("p+quiet", 8, Who::Driver, "us", &mut |it| {
        for i in 0..it {
            words.p(0, i, target);
            shmem.quiet();
        }
    });
    b.measure("g", 8, Who::Driver, "us", &mut |it| {
        let mut s = 0;
        for _ in 0..it {
            s += words.g(1, target);
        }
        std::hint::black_box(s);
    });
    b.measure("fetch_add", 8, Who::Driver, "us", &mut |it| {
        for _ in 0..it {
            std::hint::black_box(words.atomic_fetch_add(2, 1, target));
        }
    });
    b.measure("add", 8, Who::Driver, "us", &mut |it| {
        for _ in 0..it {
            words.atomic_add(3, 1, target);
        }
        shmem.quiet();
    });
    b.measure("put_signal+quiet", 8, Who::Driver, "us", &mut |it| {
        for _ in 0..it {
            dst.put_signal(0, &local[..8], &sig, 0, 1, SignalOp::Add, target);
            shmem.quiet();
        }
    });
    // One-way latency between PE 0 and PE n-1: p + wait_until, both ways.
    let mut round = 0u64;
    b.measure("pingpong_one_way", 8, Who::Pair, "us", &mut |it| {
        for _ in 0..it {
            round += 1;
            if me == 0 {
                words.atomic_set(4, round, target);
                if n == 1 {
                    // A single PE answers itself.
                    words.atomic_set(5, round, 0);
                }
                words.wait_until(5, Cmp::Ge, round);
            } else {
                words.wait_until(4, Cmp::Ge, round);
                words.atomic_set(5, round, 0);
            }
        }
    });
    if let Some(r) = b.rows.last_mut() {
        r.best /= 2.0;
        r.median /= 2.0;
    }
    if n == 1 {
        let (best, median) = hw_cacheline_one_way(quick);
        b.rows.push(Row { figure: "hw_cacheline_one_way".into(), bytes: 64, pes: 1, best, median, unit: "us" });
    }
    b.measure("barrier_all", 0, Who::All, "us", &mut |it| {
        for _ in 0..it {
            shmem.barrier_all();
        }
    });
    let mut size = 8;
    while size <= maxb {
        b.measure("put_bw", size, Who::Driver, "MB/s", &mut |it| {
            for _ in 0..it {
                dst.put(0, &local[..size], target);
            }
            shmem.quiet();
        });
        b.measure("get_bw", size, Who::Driver, "MB/s", &mut |it| {
            for _ in 0..it {
                src.get(0, &mut local[..size], target);
            }
        });
        let mut scratch = vec![0u8; size];
        b.measure("memcpy_bw", size, Who::Driver, "MB/s", &mut |it| {
            for _ in 0..it {
                scratch.copy_from_slice(&local[..size]);
                std::hint::black_box(&mut scratch);
            }
        });
        size *= if quick { 64 } else { 4 };
    }
    let world = shmem.team_world();
    let lsrc = shmem.alloc::<i64>(8192 * n).map_err(|e| e.to_string())?;
    let ldst = shmem.alloc::<i64>(8192 * n).map_err(|e| e.to_string())?;
    for elems in [1usize, 8192] {
        let bytes = elems * 8;
        b.measure("broadcast", bytes, Who::All, "us", &mut |it| {
            for _ in 0..it {
                world.broadcast(&ldst, &lsrc, elems, 0);
            }
        });
        b.measure("fcollect", bytes, Who::All, "us", &mut |it| {
            for _ in 0..it {
                world.fcollect(&ldst, &lsrc, elems);
            }
        });
        b.measure("alltoall", bytes, Who::All, "us", &mut |it| {
            for _ in 0..it {
                world.alltoall(&ldst, &lsrc, elems);
            }
        });
        b.measure("sum_reduce", bytes, Who::All, "us", &mut |it| {
            for _ in 0..it {
                world.reduce(ReduceOp::Sum, &ldst, &lsrc, elems);
            }
        });
    }
    finish(&b, &value)
}

/// Prints and writes the results (PE 0).
fn finish(b: &Bench<'_>, value: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    if b.shmem.my_pe() == 0 {
        print_table(&b.rows);
        if let Some(path) = value("--csv") {
            write_csv(&path, &b.rows).map_err(|e| format!("{path}: {e}"))?;
        }
        if let Some(path) = value("--json") {
            write_json(&path, &b.rows).map_err(|e| format!("{path}: {e}"))?;
        }
    }
    Ok(())
}

/// The many-PE set (`--coll`): back-to-back calls on every PE, the largest
/// per-PE time per call.
fn coll_set(shmem: &Ishmem, b: &mut Bench<'_>) -> Result<(), String> {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let world = shmem.team_world();
    let elems_max = 8192;
    let src = shmem.alloc::<i64>(elems_max * n).map_err(|e| e.to_string())?;
    let dst = shmem.alloc::<i64>(elems_max * n).map_err(|e| e.to_string())?;
    let words = shmem.alloc::<u64>(8).map_err(|e| e.to_string())?;
    let local = vec![1i64; elems_max];
    b.measure("barrier_all_max", 0, Who::AllMax, "us", &mut |it| {
        for _ in 0..it {
            shmem.barrier_all();
        }
    });
    b.measure("team_sync_max", 0, Who::AllMax, "us", &mut |it| {
        for _ in 0..it {
            world.sync();
        }
    });
    for elems in [1usize, elems_max] {
        let bytes = elems * 8;
        b.measure("broadcast_max", bytes, Who::AllMax, "us", &mut |it| {
            for _ in 0..it {
                world.broadcast(&dst, &src, elems, 0);
            }
        });
        b.measure("collect_max", bytes, Who::AllMax, "us", &mut |it| {
            for _ in 0..it {
                world.collect(&dst, &src, elems);
            }
        });
        b.measure("fcollect_max", bytes, Who::AllMax, "us", &mut |it| {
            for _ in 0..it {
                world.fcollect(&dst, &src, elems);
            }
        });
        b.measure("alltoall_max", bytes, Who::AllMax, "us", &mut |it| {
            for _ in 0..it {
                world.alltoall(&dst, &src, elems);
            }
        });
        b.measure("sum_reduce_max", bytes, Who::AllMax, "us", &mut |it| {
            for _ in 0..it {
                world.reduce(ReduceOp::Sum, &dst, &src, elems);
            }
        });
    }
    b.measure("fetch_add_to_pe0_max", 8, Who::AllMax, "us", &mut |it| {
        for _ in 0..it {
            std::hint::black_box(words.atomic_fetch_add(0, 1, 0));
        }
    });
    for elems in [1usize, elems_max] {
        b.measure("ring_put+quiet_max", elems * 8, Who::AllMax, "us", &mut |it| {
            for _ in 0..it {
                dst.put(0, &local[..elems], (me + 1) % n);
                shmem.quiet();
            }
        });
    }
    Ok(())
}

fn print_table(rows: &[Row]) {
    println!("{:<22} {:>9} {:>4} {:>12} {:>12}  unit", "figure", "bytes", "PEs", "best", "median");
    for r in rows {
        println!("{:<22} {:>9} {:>4} {:>12.4} {:>12.4}  {}", r.figure, r.bytes, r.pes, r.best, r.median, r.unit);
    }
}

/// Appends to `path` (writing the header when the file is new), so runs on
/// several PE counts collect in one file.
fn write_csv(path: &str, rows: &[Row]) -> std::io::Result<()> {
    let new = !std::path::Path::new(path).exists();
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    if new {
        writeln!(f, "figure,bytes,pes,best,median,unit")?;
    }
    for r in rows {
        writeln!(f, "{},{},{},{:.4},{:.4},{}", r.figure, r.bytes, r.pes, r.best, r.median, r.unit)?;
    }
    Ok(())
}

fn write_json(path: &str, rows: &[Row]) -> std::io::Result<()> {
    let items: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "  {{\"figure\": \"{}\", \"bytes\": {}, \"pes\": {}, \"best\": {:.4}, \"median\": {:.4}, \"unit\": \"{}\"}}",
                r.figure, r.bytes, r.pes, r.best, r.median, r.unit
            )
        })
        .collect();
    std::fs::write(path, format!("[\n{}\n]\n", items.join(",\n")))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("plot") => plot::plot(&args[1..]),
        Some("plot-scale") => plot::plot_scale(&args[1..]),
        Some("plot-gpu") => plot::plot_gpu(&args[1..]),
        _ => Err("usage: ishmrun -n N ishmem-perf run [--quick] [--csv FILE] [--json FILE]\n       ishmem-perf plot --input FILE.csv [--input ...] --out DIR\n       ishmem-perf plot-scale --input LABEL=FILE.csv [--input ...] --out DIR\n       ishmem-perf plot-gpu --input LABEL=FILE.csv [--input ...] --out DIR".into()),
    };
    if let Err(e) = result {
        eprintln!("ishmem-perf: {e}");
        std::process::exit(1);
    }
}
