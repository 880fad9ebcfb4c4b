//! `ishmem-perf plot`: PNG charts from result CSVs (ishmem-perf's or the C
//! benchmark's): bandwidth vs size, latency vs size, barrier vs PEs.
//! `--input [LABEL=]FILE` may repeat (e.g. `ishmem-rs=a.csv oshmem=b.csv`).

use plotters::prelude::*;
use std::collections::BTreeMap;

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

fn load_font() -> Result<(), String> {
    for p in FONT_PATHS {
        if let Ok(bytes) = std::fs::read(p) {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            return plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| format!("{p} is not a usable font"));
        }
    }
    Err(format!(
        "no font found for the chart text; tried {} (Debian: apt-get install fonts-dejavu-core)",
        FONT_PATHS.join(", ")
    ))
}

/// (label, figure, bytes, pes) -> median
type Data = BTreeMap<(String, String, usize, usize), f64>;

fn read(args: &[String]) -> Result<(Data, String), String> {
    let mut data = Data::new();
    let mut out = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--input" => {
                let spec = args.get(i + 1).ok_or("--input needs a file")?;
                let (label, path) = spec.split_once('=').unwrap_or(("ishmem-rs", spec));
                let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
                for (ln, line) in text.lines().enumerate().skip(1) {
                    let f: Vec<&str> = line.split(',').collect();
                    if f.len() != 6 {
                        return Err(format!("{path}:{}: expected 6 columns", ln + 1));
                    }
                    let num = |s: &str| s.parse::<f64>().map_err(|_| format!("{path}:{}: bad number {s:?}", ln + 1));
                    data.insert(
                        (label.to_string(), f[0].to_string(), num(f[1])? as usize, num(f[2])? as usize),
                        num(f[4])?,
                    );
                }
                i += 2;
            }
            "--out" => {
                out = args.get(i + 1).cloned();
                i += 2;
            }
            a => return Err(format!("plot: unknown argument {a:?}")),
        }
    }
    Ok((data, out.ok_or("plot: --out DIR is required")?))
}

type Series = Vec<(String, Vec<(f64, f64)>)>;

fn chart(path: &str, title: &str, xdesc: &str, ydesc: &str, series: &Series, logx: bool) -> Result<(), String> {
    chart_styled(path, title, xdesc, ydesc, series, logx, None)
}

/// As `chart`; series whose name starts with `thin` are drawn with thin
/// lines and hollow points (a reference beside the main lines).
#[allow(clippy::too_many_arguments)]
fn chart_styled(
    path: &str, title: &str, xdesc: &str, ydesc: &str, series: &Series, logx: bool, thin: Option<&str>,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{path}: {e}");
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return Err(format!("{path}: no data for this chart"));
    }
    let root = BitMapBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut b = ChartBuilder::on(&root);
    b.caption(title, ("sans-serif", 26)).margin(15).x_label_area_size(45).y_label_area_size(75);
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    macro_rules! draw {
        ($chart:expr) => {{
            let mut c = $chart;
            c.configure_mesh().x_desc(xdesc).y_desc(ydesc).draw().map_err(|e| err(&e))?;
            // With a reference library, a figure has one color in both.
            let mut figs: Vec<&str> = Vec::new();
            for (name, _) in series.iter() {
                let f = name.split_once(' ').map_or(name.as_str(), |(_, f)| f);
                if !figs.contains(&f) {
                    figs.push(f);
                }
            }
            for (i, (name, p)) in series.iter().enumerate() {
                let fig = name.split_once(' ').map_or(name.as_str(), |(_, f)| f);
                let k = if thin.is_some() { figs.iter().position(|f| *f == fig).unwrap_or(i) } else { i };
                let col = colors[k % colors.len()];
                let reference = thin.is_some_and(|t| name.starts_with(t));
                let w = if reference { 1 } else { 2 };
                c.draw_series(LineSeries::new(p.iter().copied(), col.stroke_width(w)))
                    .map_err(|e| err(&e))?
                    .label(name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(w)));
                if reference {
                    c.draw_series(p.iter().map(|&(x, y)| Circle::new((x, y), 4, col.stroke_width(1))))
                        .map_err(|e| err(&e))?;
                } else {
                    c.draw_series(p.iter().map(|&(x, y)| Circle::new((x, y), 3, col.filled()))).map_err(|e| err(&e))?;
                }
            }
            c.configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(|e| err(&e))?;
        }};
    }
    if logx {
        draw!(b
            .build_cartesian_2d((x0..x1 * 1.2).log_scale(), (y0 * 0.8..y1 * 1.25).log_scale())
            .map_err(|e| err(&e))?);
    } else {
        draw!(b.build_cartesian_2d(x0 - 0.5..x1 + 0.5, 0.0..y1 * 1.2).map_err(|e| err(&e))?);
    }
    root.present().map_err(|e| err(&e))?;
    println!("wrote {path}");
    Ok(())
}

pub fn plot(args: &[String]) -> Result<(), String> {
    let (data, out) = read(args)?;
    load_font()?;
    std::fs::create_dir_all(&out).map_err(|e| format!("{out}: {e}"))?;
    let pes2 = |fig: &str| -> Series {
        let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for ((label, f, bytes, pes), v) in &data {
            if f == fig && *pes == 2 && *bytes > 0 {
                by.entry(format!("{label} {fig}")).or_default().push((*bytes as f64, *v));
            }
        }
        by.into_iter().collect()
    };
    let mut bw = Series::new();
    for fig in ["put_bw", "get_bw", "memcpy_bw"] {
        bw.extend(pes2(fig));
    }
    chart(&format!("{out}/bandwidth.png"), "Bandwidth vs size (2 PEs)", "bytes", "MB/s", &bw, true)?;
    // Latency per operation from the same rows: us = bytes / (MB/s).
    let lat: Series = bw
        .iter()
        .filter(|(n, _)| !n.contains("memcpy"))
        .map(|(n, p)| (n.replace("_bw", " time"), p.iter().map(|&(b, mbs)| (b, b / mbs)).collect()))
        .collect();
    chart(&format!("{out}/latency.png"), "Time per operation vs size (2 PEs)", "bytes", "microseconds", &lat, true)?;
    let mut bar: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for ((label, f, _, pes), v) in &data {
        if f == "barrier_all" {
            bar.entry(label.clone()).or_default().push((*pes as f64, *v));
        }
    }
    chart(
        &format!("{out}/barrier.png"),
        "barrier_all latency vs PEs",
        "PEs",
        "microseconds",
        &bar.into_iter().collect(),
        false,
    )?;
    Ok(())
}

/// `ishmem-perf plot-scale`: the many-PE figures (`_max`, from `run --coll`
/// or the C benchmark's `--coll`) against the PE count, one chart per
/// message size, every `--input` label a set of lines.
pub fn plot_scale(args: &[String]) -> Result<(), String> {
    let (data, out) = read(args)?;
    load_font()?;
    std::fs::create_dir_all(&out).map_err(|e| format!("{out}: {e}"))?;
    // The first label's lines are drawn bold, the others thin.
    let first = data.keys().next().map(|k| k.0.clone());
    for (bytes, name, title, figs) in [
        (
            8usize,
            "scale-8B.png",
            "8-byte collectives and barrier: largest per-PE time per call",
            &["barrier_all_max", "broadcast_max", "fcollect_max", "sum_reduce_max", "alltoall_max", "collect_max"][..],
        ),
        (
            65536,
            "scale-64KiB.png",
            "64 KiB collectives: largest per-PE time per call",
            &["broadcast_max", "fcollect_max", "sum_reduce_max", "alltoall_max", "collect_max"][..],
        ),
    ] {
        let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for ((label, f, b, pes), v) in &data {
            let want = if f == "barrier_all_max" { *b == 0 && bytes == 8 } else { *b == bytes };
            if want && figs.contains(&f.as_str()) {
                by.entry(format!("{label} {}", f.trim_end_matches("_max"))).or_default().push((*pes as f64, *v));
            }
        }
        let series: Series = by.into_iter().collect();
        let thin = series.iter().map(|(n, _)| n.split(' ').next().unwrap_or("")).find(|l| Some(*l) != first.as_deref());
        chart_styled(&format!("{out}/{name}"), title, "PEs", "microseconds", &series, true, thin)?;
    }
    Ok(())
}

/// One GPU benchmark CSV (`tests/cuda/bench_vs.cu`: `# title` lines, then
/// figure,scope,bytes,value,unit): (figure, scope, bytes) -> value.
type GpuRows = BTreeMap<(String, String, usize), f64>;

fn read_gpu(path: &str) -> Result<GpuRows, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut rows = GpuRows::new();
    for (ln, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.starts_with("figure,") || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 5 {
            return Err(format!("{path}:{}: expected 5 columns (figure,scope,bytes,value,unit)", ln + 1));
        }
        let bytes = f[2].parse::<usize>().map_err(|_| format!("{path}:{}: bad size {:?}", ln + 1, f[2]))?;
        let v = f[3].parse::<f64>().map_err(|_| format!("{path}:{}: bad number {:?}", ln + 1, f[3]))?;
        rows.insert((f[0].to_string(), f[1].to_string(), bytes), v);
    }
    Ok(rows)
}

/// `ishmem-perf plot-gpu --input LABEL=FILE.csv [--input ...] --out DIR`:
/// the side-by-side GPU benchmark (`tests/cuda/bench-vs-nvshmem.sh`)
/// against the message size: put and get bandwidth by thread-group form,
/// and the collectives' time per call. The first label is drawn bold, the
/// others thin, each figure one color in all.
pub fn plot_gpu(args: &[String]) -> Result<(), String> {
    let mut inputs: Vec<(String, GpuRows)> = Vec::new();
    let mut out = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--input" => {
                let spec = args.get(i + 1).ok_or("--input needs LABEL=FILE")?;
                let (label, path) = spec.split_once('=').ok_or("--input needs LABEL=FILE")?;
                inputs.push((label.to_string(), read_gpu(path)?));
                i += 2;
            }
            "--out" => {
                out = args.get(i + 1).cloned();
                i += 2;
            }
            a => return Err(format!("plot-gpu: unknown argument {a:?}")),
        }
    }
    let out = out.ok_or("plot-gpu: --out DIR is required")?;
    if inputs.is_empty() {
        return Err("plot-gpu: at least one --input LABEL=FILE".into());
    }
    load_font()?;
    std::fs::create_dir_all(&out).map_err(|e| format!("{out}: {e}"))?;
    let thin = inputs.get(1).map(|(l, _)| l.clone());
    // Labels must not contain spaces: a series is named "LABEL FIGURE".
    let series = |pick: &dyn Fn(&str, &str) -> Option<String>| -> Series {
        let mut s = Series::new();
        for (label, rows) in &inputs {
            let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
            for ((fig, scope, bytes), v) in rows {
                if let Some(name) = pick(fig, scope) {
                    if *bytes > 0 && *v > 0.0 {
                        by.entry(format!("{label} {name}")).or_default().push((*bytes as f64, *v));
                    }
                }
            }
            s.extend(by);
        }
        s
    };
    for (name, title, want) in [
        ("gpu-put-bw.png", "Device put bandwidth (nbi + quiet, 32 blocks), GB/s", "put_bw"),
        ("gpu-get-bw.png", "Device get bandwidth (nbi + quiet, 32 blocks), GB/s", "get_bw"),
    ] {
        let s = series(&|fig, scope| fig.starts_with(want).then(|| scope.to_string()));
        chart_styled(&format!("{out}/{name}"), title, "bytes", "GB/s", &s, true, thin.as_deref())?;
    }
    let colls = ["broadcast", "fcollect", "alltoall", "sum_reduce"];
    let s = series(&|fig, scope| (colls.contains(&fig) && scope == "block").then(|| fig.to_string()));
    chart_styled(
        &format!("{out}/gpu-collectives.png"),
        "Device collectives (block form, world team): time per call",
        "bytes per PE",
        "microseconds",
        &s,
        true,
        thin.as_deref(),
    )?;
    Ok(())
}
