//! The report's chart: where the time went, as one self-contained HTML page
//! (inline SVG and CSS, nothing fetched from a network).
//!
//! Two pictures, like the plots the field reports drew by hand: one lane per
//! worker with a bar per chunk (hover for file, lines, rows, seconds; red
//! bars had rejects), and the load's rows per second over time. A small
//! inline script records how many bars the browser laid out, so a test can
//! check in a real browser that the chart rendered.

use std::fmt::Write as _;

use crate::report::{ChunkRecord, LoadReport};

const WIDTH: f64 = 900.0;
const LANE: f64 = 22.0;
const LEFT: f64 = 70.0;

/// The HTML page for a report.
pub fn html(report: &LoadReport) -> String {
    let s = &report.summary;
    let wall = s.wall_seconds.max(report.chunks.iter().map(|c| c.end_s).fold(0.0, f64::max)).max(1e-3);
    let mut page = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>sluice load report</title><style>\
         body{font:14px sans-serif;margin:20px}rect.chunk{fill:#4a7bd0;stroke:#fff;stroke-width:1}rect.chunk.rejects{fill:#d04a4a}\
         text{font:11px sans-serif}polyline{fill:none;stroke:#2a8a4a;stroke-width:1.5}</style></head><body>",
    );
    let _ = write!(page, "<h1>{}</h1><p>{}</p>", escape(&s.table), escape(&report.summary_line()));
    for line in report.wait_lines() {
        let _ = write!(page, "<p>{}</p>", escape(line.trim_start()));
    }
    // What the summary warned of (a lock waited for, what the server said)
    // is part of where the time went.
    if !report.warnings.is_empty() {
        page.push_str("<ul class=\"warnings\">");
        for warning in &report.warnings {
            let _ = write!(page, "<li>{}</li>", escape(warning));
        }
        page.push_str("</ul>");
    }
    page.push_str(&lanes(&report.chunks, s.workers.max(1), wall));
    page.push_str(&throughput(&report.chunks, wall));
    page.push_str(
        "<script>addEventListener('load',()=>{document.body.dataset.rendered=[...document.querySelectorAll\
         ('rect.chunk')].filter(r=>r.getBBox().width>0).length})</script></body></html>",
    );
    page
}

/// One lane per worker, one bar per chunk, on a shared time axis.
fn lanes(chunks: &[ChunkRecord], workers: usize, wall: f64) -> String {
    let height = LANE * workers as f64 + 40.0;
    let x = |t: f64| LEFT + t / wall * (WIDTH - LEFT - 40.0);
    let mut svg = format!(
        "<h2>Chunks per worker</h2><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\">"
    );
    for w in 0..workers {
        let _ = write!(svg, "<text x=\"4\" y=\"{}\">worker {w}</text>", LANE * w as f64 + 15.0);
    }
    for c in chunks {
        let (x0, x1) = (x(c.start_s), x(c.end_s));
        let class = if c.rejected > 0 { "chunk rejects" } else { "chunk" };
        let _ = write!(
            svg,
            "<rect class=\"{class}\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{}: lines from {}, \
             {} rows, {} rejected, {:.2} s</title></rect>",
            LANE * c.worker as f64 + 3.0,
            (x1 - x0).max(1.0),
            LANE - 6.0,
            escape(&c.file),
            c.first_line,
            c.rows,
            c.rejected,
            c.end_s - c.start_s
        );
    }
    svg.push_str(&time_axis(LANE * workers as f64 + 15.0, wall, &x));
    svg.push_str("</svg>");
    svg
}

/// Rows per second over time, in 100 buckets; each chunk's rows are spread
/// evenly over its duration.
fn throughput(chunks: &[ChunkRecord], wall: f64) -> String {
    const BUCKETS: usize = 100;
    let step = wall / BUCKETS as f64;
    let mut rows = [0.0f64; BUCKETS];
    for c in chunks {
        let span = (c.end_s - c.start_s).max(1e-9);
        for (b, bucket) in rows.iter_mut().enumerate() {
            let (lo, hi) = (b as f64 * step, (b + 1) as f64 * step);
            let overlap = (hi.min(c.end_s) - lo.max(c.start_s)).max(0.0);
            *bucket += c.rows as f64 * overlap / span;
        }
    }
    let peak = rows.iter().map(|r| r / step).fold(1.0, f64::max);
    let (height, top) = (160.0, 10.0);
    let x = |t: f64| LEFT + t / wall * (WIDTH - LEFT - 40.0);
    let points: Vec<String> = rows
        .iter()
        .enumerate()
        .map(|(b, r)| format!("{:.1},{:.1}", x((b as f64 + 0.5) * step), top + height * (1.0 - r / step / peak)))
        .collect();
    let mut svg = format!(
        "<h2>Rows per second</h2><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{}\">",
        height + 40.0
    );
    let _ = write!(svg, "<text x=\"4\" y=\"{}\">{}</text>", top + 10.0, crate::report::human_count(peak));
    let _ = write!(svg, "<polyline points=\"{}\"/>", points.join(" "));
    svg.push_str(&time_axis(top + height + 15.0, wall, &x));
    svg.push_str("</svg>");
    svg
}

fn time_axis(y: f64, wall: f64, x: &dyn Fn(f64) -> f64) -> String {
    (0..=5)
        .map(|i| {
            let t = wall * i as f64 / 5.0;
            format!("<text x=\"{:.1}\" y=\"{y:.1}\">{t:.1} s</text>", x(t) - 8.0)
        })
        .collect()
}

/// Minimal HTML escaping for text and attribute values.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_draws_a_bar_per_chunk() {
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
        let chunk = |worker, start_s, end_s, rejected| ChunkRecord {
            seq: 0,
            file: "f<1>.csv".into(),
            byte_offset: 0,
            byte_len: 10,
            first_line: 1,
            first_record: 1,
            records: 5,
            rows: 5,
            rejected,
            suppressed: 0,
            skipped: 0,
            isolation_copies: 0,
            worker,
            binary: false,
            staged: false,
            replaced: 0,
            batch: 0,
            start_s,
            end_s,
        };
        let chunks = [chunk(0, 0.0, 1.0, 0), chunk(1, 0.5, 2.0, 1)];
        let svg = lanes(&chunks, 2, 2.0);
        assert_eq!(svg.matches("<rect class=\"chunk").count(), 2);
        assert_eq!(svg.matches("chunk rejects").count(), 1);
        assert!(svg.contains("f&lt;1&gt;.csv"));
        assert!(throughput(&chunks, 2.0).contains("<polyline points=\""));
    }
}
