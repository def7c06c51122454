//! Draws the scaling sweep (`benches/scaling.rs`) as an SVG: x = pending timers, y = ns per
//! operation (criterion's median, with its 95 % interval as a bar), both on log scales, one line per
//! (system, operation): schedule solid with circles, expire dashed with triangles, one colour per
//! system, the legend beside the chart.
//!
//! ```sh
//! bench/scripts/plot_scaling.sh  # runs the sweep, then this
//! cargo run --release -p delaywheel-bench --example plot_scaling -- target/scaling.csv docs/scaling.svg
//! ```
//!
//! Arguments: the CSV the sweep wrote (default `$SCALING_CSV`, else `target/scaling.csv`) and the
//! SVG to write (default `docs/scaling.svg`); a third, optional, is a note printed under the title
//! (the script passes the CPU, commit, date and load). The CSV is
//! `system,operation,pending,median_ns,lower_ns,upper_ns`, one line per point.

use std::collections::BTreeMap;
use std::error::Error;

use plotters::prelude::*;

struct Point {
    pending: f64,
    median: f64,
    lower: f64,
    upper: f64,
}

/// (system, operation) → its points, in the CSV's order.
type Series = BTreeMap<(String, String), Vec<Point>>;

fn read_csv(path: &str) -> Result<Series, Box<dyn Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut series = Series::new();
    for (n, line) in text.lines().enumerate().skip(1).filter(|(_, line)| !line.trim().is_empty()) {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [system, operation, pending, median, lower, upper] = fields[..] else {
            return Err(format!("{path}:{}: expected 6 fields, got {line:?}", n + 1).into());
        };
        let number =
            |field: &str| field.parse::<f64>().map_err(|e| format!("{path}:{}: {field:?}: {e}", n + 1));
        let point = Point {
            pending: number(pending)?,
            median: number(median)?,
            lower: number(lower)?,
            upper: number(upper)?,
        };
        series.entry((system.to_string(), operation.to_string())).or_default().push(point);
    }
    if series.is_empty() {
        return Err(format!("{path}: no points").into());
    }
    for points in series.values_mut() {
        points.sort_by(|a, b| a.pending.total_cmp(&b.pending));
    }
    Ok(series)
}

/// One colour per system, delaywheel first and darkest; the same system keeps its colour in every run.
fn colour(system: &str) -> RGBColor {
    match system {
        "delaywheel" => RGBColor(0x1F, 0x4E, 0xB4),
        "binaryheap-mutex" => RGBColor(0xD9, 0x5F, 0x02),
        "tokio-delayqueue" => RGBColor(0x1B, 0x9E, 0x77),
        "hierarchical_hash_wheel_timer" => RGBColor(0x75, 0x70, 0xB3),
        _ => RGBColor(0x66, 0x66, 0x66),
    }
}

/// 10000 → "10k", 1000000 → "1M".
fn count(x: f64) -> String {
    match x {
        x if x >= 1e6 => format!("{}M", x / 1e6),
        x if x >= 1e3 => format!("{}k", x / 1e3),
        x => format!("{x}"),
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let default_csv = std::env::var("SCALING_CSV").unwrap_or_else(|_| "target/scaling.csv".into());
    let csv = args.first().cloned().unwrap_or(default_csv);
    let svg = args.get(1).cloned().unwrap_or_else(|| "docs/scaling.svg".into());
    let note = args.get(2).cloned().unwrap_or_default();
    let series = read_csv(&csv)?;
    plot(&series, &svg, &note)?;
    eprintln!("plot_scaling: {} lines from {csv} drawn to {svg}", series.len());
    Ok(())
}

/// 1-2-5 steps covering [lo, hi] (labelled y ticks), and the integer multiples between them (grid).
fn ticks_125(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    let (mut major, mut minor) = (Vec::new(), Vec::new());
    for e in (lo.log10().floor() as i32)..=(hi.log10().ceil() as i32) {
        let decade = 10f64.powi(e);
        for m in 1..10 {
            let y = f64::from(m) * decade;
            if (lo..=hi).contains(&y) {
                if [1, 2, 5].contains(&m) {
                    major.push(y)
                } else {
                    minor.push(y)
                }
            }
        }
    }
    (major, minor)
}

/// The legend, beside the chart: one row per line, in the chart's order.
fn legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    rows: &[(String, RGBColor, bool)],
) -> Result<(), Box<dyn Error>> {
    let grey = RGBColor(0x55, 0x55, 0x55);
    let mut y = 40;
    let mut last_operation = "";
    for (label, colour, dashed) in rows {
        let (system, operation) = label.split_once(": ").unwrap_or((label, ""));
        if operation != last_operation {
            let heading = if *dashed { "expire (dashed, ▲)" } else { "schedule (solid, ●)" };
            area.draw(&Text::new(heading, (8, y), ("sans-serif", 14).into_font().color(&grey)))?;
            y += 24;
            last_operation = operation;
        }
        let width = if system == "delaywheel" { 3 } else { 2 };
        let style = colour.stroke_width(width);
        if *dashed {
            area.draw(&PathElement::new(vec![(8, y + 7), (15, y + 7)], style))?;
            area.draw(&PathElement::new(vec![(21, y + 7), (28, y + 7)], style))?;
            area.draw(&TriangleMarker::new((18, y + 7), 5, colour.filled()))?;
        } else {
            area.draw(&PathElement::new(vec![(8, y + 7), (28, y + 7)], style))?;
            area.draw(&Circle::new((18, y + 7), 4, colour.filled()))?;
        }
        area.draw(&Text::new(system.to_string(), (36, y), ("sans-serif", 13)))?;
        y += 22;
    }
    Ok(())
}

fn plot(series: &Series, svg: &str, note: &str) -> Result<(), Box<dyn Error>> {
    let all = || series.values().flatten();
    let x_min = all().map(|p| p.pending).fold(f64::INFINITY, f64::min);
    let x_max = all().map(|p| p.pending).fold(0.0, f64::max);
    let y_min = all().map(|p| p.lower.min(p.median)).fold(f64::INFINITY, f64::min);
    let y_max = all().map(|p| p.upper.max(p.median)).fold(0.0, f64::max);
    // Both axes logarithmic: x spans decades of pending timers; on y equal ratios are equal
    // distances, so a line's flatness (or growth) reads the same at 40 ns as at 400 ns, and the
    // gap between two lines is their ratio.
    let (x_lo, x_hi) = (10f64.powf(x_min.log10().floor()) / 1.3, 10f64.powf(x_max.log10().ceil()) * 1.3);
    let (y_lo, y_hi) = (y_min / 1.3, y_max * 1.3);
    // Grid and labels on whole decades only on x (a log axis would label every 1k, 2k, … 90k).
    let decades: Vec<f64> =
        (x_min.log10().floor() as i32..=x_max.log10().ceil() as i32).map(|e| 10f64.powi(e)).collect();
    let x_minor: Vec<f64> = decades.iter().flat_map(|&d| [2.0 * d, 5.0 * d]).filter(|&x| x < x_hi).collect();
    let (y_major, y_minor) = ticks_125(y_lo, y_hi);

    let root = SVGBackend::new(svg, (1040, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(if note.is_empty() { 44 } else { 64 });
    title.draw(&Text::new(
        "Cost per operation as pending timers grow (lower is better)",
        (60, 10),
        ("sans-serif", 22).into_font(),
    ))?;
    if !note.is_empty() {
        title.draw(&Text::new(
            note,
            (60, 40),
            ("sans-serif", 13).into_font().color(&RGBColor(0x55, 0x55, 0x55)),
        ))?;
    }
    let (plot_area, legend_area) = body.split_horizontally(800);

    let mut chart = ChartBuilder::on(&plot_area)
        .margin_left(16)
        .margin_right(16)
        .margin_bottom(12)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (x_lo..x_hi).log_scale().with_key_points(decades).with_light_points(x_minor),
            (y_lo..y_hi).log_scale().with_key_points(y_major).with_light_points(y_minor),
        )?;
    chart
        .configure_mesh()
        .x_desc("pending timers (log scale)")
        .y_desc("ns per operation, log scale (criterion median, 95 % interval)")
        .x_label_formatter(&|x| count(*x))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(RGBColor(0xF0, 0xF0, 0xF0))
        .bold_line_style(RGBColor(0xCC, 0xCC, 0xCC))
        .draw()?;

    // Schedule lines first, then expire; delaywheel first within each (and in the legend).
    let mut ordered: Vec<_> = series.iter().collect();
    ordered.sort_by_key(|((system, operation), _)| {
        (operation != "schedule", system != "delaywheel", system.clone())
    });
    let mut rows = Vec::new();
    for ((system, operation), points) in ordered {
        let colour = colour(system);
        let width = if system == "delaywheel" { 3 } else { 2 };
        let style = colour.stroke_width(width);
        let dashed = operation == "expire";
        let line: Vec<(f64, f64)> = points.iter().map(|p| (p.pending, p.median)).collect();
        if dashed {
            chart.draw_series(DashedLineSeries::new(line.clone(), 9, 5, style))?;
        } else {
            chart.draw_series(LineSeries::new(line.clone(), style))?;
        }
        // The 95 % interval: a vertical bar with 8-pixel caps.
        for p in points {
            let bar = colour.stroke_width(1);
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(p.pending, p.lower), (p.pending, p.upper)],
                bar,
            )))?;
            chart
                .draw_series([p.lower, p.upper].map(|y| {
                    EmptyElement::at((p.pending, y)) + PathElement::new(vec![(-4, 0), (4, 0)], bar)
                }))?;
        }
        if dashed {
            chart.draw_series(line.iter().map(|&(x, y)| TriangleMarker::new((x, y), 5, colour.filled())))?;
        } else {
            chart.draw_series(line.iter().map(|&(x, y)| Circle::new((x, y), 4, colour.filled())))?;
        }
        rows.push((format!("{system}: {operation}"), colour, dashed));
    }
    legend(&legend_area, &rows)?;
    root.present()?;
    Ok(())
}
