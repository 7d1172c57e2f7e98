//! The report's chart: where the time went, as one self-contained HTML page
//! (inline SVG and CSS, nothing fetched from a network).
//!
//! Two pictures, like the plots the field reports drew by hand: one lane per
//! worker with a bar per chunk (hover for file, lines, rows, seconds; red
//! bars had rejects), and the load's rows per second over time. Under the
//! workers, a lane of the steps around the copy (before the first chunk,
//! the indexes built again, ANALYZE): on a load with deferred indexes they
//! can be a third of its time, which the workers' lanes leave blank. A small
//! inline script records how many bars the browser laid out, so a test can
//! check in a real browser that the chart rendered.

use std::fmt::Write as _;

use crate::report::{Analysis, ChunkRecord, Deferral, LoadReport};

const WIDTH: f64 = 900.0;
const LANE: f64 = 22.0;
const LEFT: f64 = 70.0;

/// The HTML page for a report.
pub fn html(report: &LoadReport) -> String {
    let s = &report.summary;
    let wall = s.wall_seconds.max(report.chunks.iter().map(|c| c.end_s).fold(0.0, f64::max)).max(1e-3);
    let mut page = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>sluice load report</title><style>\
         body{font:14px sans-serif;margin:20px}rect.chunk{fill:#4a7bd0;stroke:#fff;stroke-width:1}rect.chunk.rejects{fill:#d04a4a}rect.step{fill:#9a9a9a;stroke:#fff;stroke-width:1}text.step{fill:#fff}\
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
    page.push_str(&lanes(
        &report.chunks,
        s.workers.max(1),
        wall,
        &steps((&s.deferred, s.analysis.as_ref()), &report.chunks, wall),
    ));
    page.push_str(&throughput(&report.chunks, wall));
    page.push_str(
        "<script>addEventListener('load',()=>{document.body.dataset.rendered=[...document.querySelectorAll\
         ('rect.chunk')].filter(r=>r.getBBox().width>0).length})</script></body></html>",
    );
    page
}

/// A step of the load outside the chunks: where it began and ended on the
/// time axis, and what it was.
struct Step {
    start_s: f64,
    end_s: f64,
    /// Written in its bar, where the bar is wide enough.
    label: &'static str,
    what: String,
}

/// The steps around the copy, as far as the report times them: what came
/// before the first chunk began, the indexes and constraints built again
/// after the last (`--defer-indexes`), and ANALYZE at the very end
/// (`--analyze`). The report keeps their durations, not their starts: the
/// rebuild is drawn from the last chunk's end, ANALYZE up to the end of the
/// load. Steps under 1 % of the load are left out.
fn steps((rebuilt, analysis): (&Deferral, Option<&Analysis>), chunks: &[ChunkRecord], wall: f64) -> Vec<Step> {
    let first = chunks.iter().map(|c| c.start_s).fold(f64::INFINITY, f64::min);
    let last = chunks.iter().map(|c| c.end_s).fold(0.0, f64::max);
    let analyzed = analysis.filter(|a| a.done);
    let analysis_start = analyzed.map_or(wall, |a| (wall - a.seconds).max(last));
    let mut steps = Vec::new();
    if first.is_finite() {
        steps.push(Step { start_s: 0.0, end_s: first, label: "before", what: "before the first chunk".into() });
    }
    if rebuilt.rebuild_seconds > 0.0 {
        let end_s = (last + rebuilt.rebuild_seconds).min(analysis_start);
        let names: Vec<&str> = rebuilt.built.iter().map(|b| b.name.as_str()).collect();
        let what = format!("built again: {}", names.join(", "));
        steps.push(Step { start_s: last, end_s, label: "indexes built", what });
    }
    if let Some(analysis) = analyzed {
        let what = format!("ANALYZE ({})", analysis.why);
        steps.push(Step { start_s: analysis_start, end_s: wall, label: "ANALYZE", what });
    }
    steps.retain(|s| s.end_s - s.start_s >= wall / 100.0);
    steps
}

/// One lane per worker, one bar per chunk, on a shared time axis; a lane of
/// `steps` under them, when there are any.
fn lanes(chunks: &[ChunkRecord], workers: usize, wall: f64, steps: &[Step]) -> String {
    let step_lanes = usize::from(!steps.is_empty());
    let height = LANE * (workers + step_lanes) as f64 + 40.0;
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
    if !steps.is_empty() {
        let y = LANE * workers as f64;
        let _ = write!(svg, "<text x=\"4\" y=\"{:.1}\">steps</text>", y + 15.0);
        for step in steps {
            let (x0, x1) = (x(step.start_s), x(step.end_s));
            let _ = write!(
                svg,
                "<rect class=\"step\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{}: {:.2} \
                 s</title></rect>",
                y + 3.0,
                (x1 - x0).max(1.0),
                LANE - 6.0,
                escape(&step.what),
                step.end_s - step.start_s
            );
            if x1 - x0 >= 7.0 * step.label.len() as f64 {
                let _ = write!(
                    svg,
                    "<text class=\"step\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                    x0 + 4.0,
                    y + 15.0,
                    step.label
                );
            }
        }
    }
    svg.push_str(&time_axis(LANE * (workers + step_lanes) as f64 + 15.0, wall, &x));
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
        let svg = lanes(&chunks, 2, 2.0, &[]);
        assert_eq!(svg.matches("<rect class=\"chunk").count(), 2);
        assert_eq!(svg.matches("chunk rejects").count(), 1);
        assert!(svg.contains("f&lt;1&gt;.csv"));
        assert!(throughput(&chunks, 2.0).contains("<polyline points=\""));
    }

    #[test]
    fn the_steps_around_the_copy_are_drawn_where_the_report_times_them() {
        let chunk = |start_s, end_s| ChunkRecord { start_s, end_s, ..ChunkRecord::default() };
        let chunks = [chunk(0.5, 1.5), chunk(0.6, 2.0)];
        let built = |name: &str, seconds| crate::report::BuiltObject { name: name.into(), seconds };
        let rebuilt = Deferral {
            built: vec![built("index \"a\"", 0.9), built("primary key \"k\"", 1.0)],
            rebuild_seconds: 1.0,
            ..Deferral::default()
        };
        let analysis = Analysis { done: true, seconds: 0.5, why: "autovacuum is off".into() };
        let drawn: Vec<_> = steps((&rebuilt, Some(&analysis)), &chunks, 4.0)
            .into_iter()
            .map(|s| (s.start_s, s.end_s, s.what))
            .collect();
        assert_eq!(
            drawn,
            [
                (0.0, 0.5, "before the first chunk".to_string()),
                (2.0, 3.0, "built again: index \"a\", primary key \"k\"".to_string()),
                (3.5, 4.0, "ANALYZE (autovacuum is off)".to_string()),
            ]
        );
        // A rebuild longer than the time left ends where ANALYZE begins;
        // an analysis not done, and a step under 1 % of the load, are not
        // drawn.
        let long = Deferral { rebuild_seconds: 2.0, ..rebuilt.clone() };
        let drawn = steps((&long, Some(&analysis)), &chunks, 4.0);
        assert_eq!((drawn[1].start_s, drawn[1].end_s), (2.0, 3.5));
        let not_done = Analysis::not_done("a view".into());
        let early = [chunk(0.01, 3.0)];
        assert!(steps((&Deferral::default(), Some(&not_done)), &early, 3.0).is_empty());

        let drawn = steps((&rebuilt, Some(&analysis)), &chunks, 4.0);
        let svg = lanes(&chunks, 2, 4.0, &drawn);
        assert_eq!(svg.matches("<rect class=\"step\"").count(), 3);
        assert!(svg.contains(">indexes built</text>") && svg.contains(">ANALYZE</text>"), "{svg}");
        assert!(svg.contains("<title>ANALYZE (autovacuum is off): 0.50 s</title>"), "{svg}");
        assert!(!lanes(&chunks, 2, 4.0, &[]).contains(">steps</text>"));
    }
}
