//! `crashtest view`: a run as an HTML space-time diagram.
//!
//! Nodes are vertical lanes and time runs downwards, one row per event shown (rows, not
//! nanoseconds, so that a burst of events at one instant stays readable; the time is written
//! at the left where it changes). A lane is solid while its node runs, dashed while paused,
//! and absent while dead. Messages are arrows from send to delivery (paired by
//! [`crate::messages`]); a message dropped on arrival is a red dashed arrow, one lost on the
//! way a red stub. Faults are red diamonds, kills red crosses, restarts green triangles,
//! panics red discs, partitions and clogs orange squares (hollow when they end). Every mark
//! has a tooltip, and a click shows the event in the panel at the top.
//!
//! The file is self-contained (inline SVG, CSS and a few lines of script, no fetches), so it
//! opens from disk anywhere, offline.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::{Filter, ViewArgs};
use crate::messages::{self, Arrival, Arrow};
use crate::results::SeedResult;
use crashtest_protocol::TraceKind;

use crate::trace::{self, Event, Life, Mark, Trace};

const LEFT: usize = 120;
const LANE: usize = 210;
const TOP: usize = 60;
const ROW: usize = 22;

/// Runs the seed with its trace, writes the diagram and says where.
pub(crate) fn run(args: &ViewArgs) -> anyhow::Result<ExitCode> {
    let target = crate::target::resolve(&args.target.select, &args.target.test)?;
    let (result, trace) = trace::record(&target, args.seed, args.target.seed_timeout, None)?;
    let html = render(&trace, &result, &args.filter, args.max_events)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("crashtest-seed-{}.html", args.seed)));
    std::fs::write(&out, html).with_context(|| format!("cannot write {}", out.display()))?;
    let shown = std::fs::canonicalize(&out).unwrap_or(out);
    println!(
        "seed {} of {}: {}; diagram written to {} (open file://{})",
        args.seed,
        target.test,
        result.status,
        shown.display(),
        shown.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The events drawn, one row each, and every shown lane's state at each row.
struct Layout<'a> {
    rows: Vec<&'a Event>,
    /// `states[row][column]`.
    states: Vec<Vec<Life>>,
    /// Row of each drawn event, by position in the trace.
    row_of: BTreeMap<usize, usize>,
    /// Whether `max_events` cut the diagram short.
    cut: bool,
}

impl<'a> Layout<'a> {
    /// Follows every node's life through the whole trace, and keeps the events to draw.
    fn new(
        trace: &'a Trace,
        lanes: &[usize],
        column: &BTreeMap<usize, usize>,
        filter: &Filter,
        max_events: usize,
    ) -> Layout<'a> {
        let mut state: BTreeMap<usize, Life> =
            trace.nodes.keys().map(|n| (*n, Life::Absent)).collect();
        state.insert(0, Life::Running);
        let mut layout = Layout {
            rows: Vec::new(),
            states: Vec::new(),
            row_of: BTreeMap::new(),
            cut: false,
        };
        for (position, event) in trace.events.iter().enumerate() {
            let was = state[&event.lane];
            if let Some(life) = event.life() {
                state.insert(event.lane, life);
            }
            let drawn = !event.is_scheduler()
                && event.describe().0 != Mark::Task
                && column.contains_key(&event.lane)
                && trace::in_window(filter, event.time_ns);
            if !drawn {
                continue;
            }
            if layout.rows.len() == max_events {
                layout.cut = true;
                break;
            }
            layout.row_of.insert(position, layout.rows.len());
            layout.rows.push(event);
            // A kill's row still shows the lane arriving at the cross.
            let mut now: Vec<Life> = lanes.iter().map(|l| state[l]).collect();
            if event.kind == TraceKind::Kill {
                now[column[&event.lane]] = was;
            }
            layout.states.push(now);
        }
        layout
    }
}

/// The whole HTML page.
pub(crate) fn render(
    trace: &Trace,
    result: &SeedResult,
    filter: &Filter,
    max_events: usize,
) -> anyhow::Result<String> {
    let lanes = trace.lanes(filter)?;
    let column: BTreeMap<usize, usize> = lanes.iter().enumerate().map(|(c, l)| (*l, c)).collect();
    let arrows = messages::pair(&trace.events);
    let layout = Layout::new(trace, &lanes, &column, filter, max_events);
    let width = LEFT + LANE * lanes.len() + 160;
    let height = TOP + ROW * (layout.rows.len() + 1) + 20;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
    );
    svg.push_str(
        r##"<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#2563eb"/></marker></defs>"##,
    );
    svg.push('\n');
    draw_times(&mut svg, &layout.rows, width);
    for (c, lane) in lanes.iter().enumerate() {
        draw_lane(&mut svg, &trace.nodes[lane], c, &layout.states);
    }
    for arrow in &arrows {
        draw_arrow(&mut svg, arrow, &trace.events, &layout.row_of, &column);
    }
    for (row, event) in layout.rows.iter().enumerate() {
        draw_event(&mut svg, event, lane_x(column[&event.lane]), row_y(row));
    }
    if layout.cut {
        let _ = writeln!(
            svg,
            r#"<text class="cut" x="{LEFT}" y="{}">cut off after {max_events} events: narrow with --from/--until/--node, or raise --max-events</text>"#,
            row_y(layout.rows.len())
        );
    }
    svg.push_str("</svg>\n");
    Ok(page(trace, result, &svg, layout.rows.len(), arrows.len()))
}

/// The virtual time at the left of each row where it changes, with a faint rule across.
fn draw_times(svg: &mut String, rows: &[&Event], width: usize) {
    let mut last_time = None;
    for (row, event) in rows.iter().enumerate() {
        if last_time == Some(event.time_ns) {
            continue;
        }
        last_time = Some(event.time_ns);
        let _ = writeln!(
            svg,
            r#"<line class="tick" x1="{tick}" y1="{line_y}" x2="{end}" y2="{line_y}"/><text class="time" x="{label_x}" y="{text_y}" text-anchor="end">{time}</text>"#,
            tick = LEFT - 8,
            end = width - 20,
            line_y = row_y(row),
            label_x = LEFT - 12,
            text_y = row_y(row) + 4,
            time = crate::duration::short(event.time_ns),
        );
    }
}

/// A node's name and its lane: solid while running, dashed while paused, none while dead.
fn draw_lane(svg: &mut String, name: &str, column: usize, states: &[Vec<Life>]) {
    let x = lane_x(column);
    let _ = writeln!(
        svg,
        r#"<text class="lane-name" x="{x}" y="{}" text-anchor="middle">{}</text>"#,
        TOP - 20,
        escape(name)
    );
    let mut start = 0;
    while start < states.len() {
        let kind = states[start][column];
        let mut end = start;
        while end + 1 < states.len() && states[end + 1][column] == kind {
            end += 1;
        }
        let (y1, y2) = (row_y(start) - ROW / 2, row_y(end) + ROW / 2);
        let class = match kind {
            Life::Running => Some("lane"),
            Life::Paused => Some("lane paused"),
            Life::Absent => None,
        };
        if let Some(class) = class {
            let _ = writeln!(
                svg,
                r#"<line class="{class}" x1="{x}" y1="{y1}" x2="{x}" y2="{y2}"/>"#
            );
        }
        start = end + 1;
    }
}

/// Where lane column `column` is drawn.
fn lane_x(column: usize) -> usize {
    LEFT + LANE * column + LANE / 2
}

/// Where row `row` is drawn.
fn row_y(row: usize) -> usize {
    TOP + ROW * row + ROW / 2
}

/// Draws a message whose send is shown: a blue arrow to its delivery, a red dashed one to
/// where it was dropped, or a red stub towards where it was going if it was lost.
fn draw_arrow(
    svg: &mut String,
    arrow: &Arrow,
    events: &[Event],
    row_of: &BTreeMap<usize, usize>,
    column: &BTreeMap<usize, usize>,
) {
    let Some(&from_row) = row_of.get(&arrow.from) else {
        return;
    };
    let Some(&from_column) = column.get(&events[arrow.from].lane) else {
        return;
    };
    let (x1, y1) = (lane_x(from_column), row_y(from_row));
    let end = |at: usize| {
        Some((
            lane_x(*column.get(&events[at].lane)?),
            row_y(*row_of.get(&at)?),
        ))
    };
    match arrow.to {
        Arrival::Delivered(at) => {
            if let Some((x2, y2)) = end(at) {
                let _ = writeln!(
                    svg,
                    r#"<line class="arrow" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" marker-end="url(#head)"/>"#
                );
            }
        }
        Arrival::Dropped(at) => {
            if let Some((x2, y2)) = end(at) {
                let _ = writeln!(
                    svg,
                    r#"<line class="lost" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"/>"#
                );
            }
        }
        Arrival::Lost(toward) => {
            let x2 = toward
                .and_then(|lane| column.get(&lane))
                .map_or(x1 + 60, |c| (x1 + lane_x(*c)) / 2);
            let y2 = y1 + ROW;
            let _ = writeln!(
                svg,
                r##"<line class="lost" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"/><text x="{}" y="{}" fill="#dc2626">&#10005;</text>"##,
                x2 - 4,
                y2 + 4
            );
        }
    }
}

fn draw_event(svg: &mut String, event: &Event, cx: usize, cy: usize) {
    let (mark, label) = event.describe();
    let title = escape(&format!(
        "#{} {}: {}",
        event.index,
        crate::duration::short(event.time_ns),
        event.what
    ));
    let _ = write!(
        svg,
        r#"<g class="ev m-{mark:?}" data-text="{title}"><title>{title}</title>"#
    );
    let (top, bottom, left, right) = (cy - 7, cy + 7, cx - 7, cx + 7);
    let _ = match mark {
        Mark::Kill => write!(
            svg,
            r#"<path d="M{left},{top} L{right},{bottom} M{left},{bottom} L{right},{top}" class="kill"/>"#
        ),
        Mark::Restart => write!(
            svg,
            r#"<path d="M{cx},{top} L{right},{bottom} L{left},{bottom} z" class="restart"/>"#
        ),
        Mark::Fault | Mark::Masked => write!(
            svg,
            r#"<path d="M{cx},{top} L{right},{cy} L{cx},{bottom} L{left},{cy} z" class="{class}"/>"#,
            class = if mark == Mark::Fault {
                "fault"
            } else {
                "masked"
            }
        ),
        Mark::Panic => write!(svg, r#"<circle cx="{cx}" cy="{cy}" r="7" class="panic"/>"#),
        Mark::Partition | Mark::Heal => write!(
            svg,
            r#"<rect x="{left}" y="{top}" width="14" height="14" class="{class}"/>"#,
            class = if mark == Mark::Partition {
                "partition"
            } else {
                "heal"
            }
        ),
        Mark::Message => {
            let dropped = messages::is_drop(event);
            let class = if dropped { "drop" } else { "msg" };
            write!(
                svg,
                r#"<circle cx="{cx}" cy="{cy}" r="3" class="{class}"/>"#
            )
        }
        _ => write!(svg, r#"<circle cx="{cx}" cy="{cy}" r="4" class="note"/>"#),
    };
    if mark != Mark::Message {
        let _ = write!(
            svg,
            r#"<text class="label" x="{}" y="{}">{}</text>"#,
            cx + 11,
            cy + 4,
            escape(&truncate(&label, 28))
        );
    }
    svg.push_str("</g>\n");
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}

/// Escapes text for HTML and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn page(trace: &Trace, result: &SeedResult, svg: &str, rows: usize, arrows: usize) -> String {
    let mut status = if result.passed() {
        "pass".to_owned()
    } else {
        format!(
            "{}: {}",
            result.status.name().to_uppercase(),
            result.headline()
        )
    };
    if let Some(note) = trace::death_note(trace, result) {
        status = format!("{status} ({note})");
    }
    let title = format!("seed {} of {}", result.seed, result.test);
    let mut html = String::new();
    let _ = write!(
        html,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 13px system-ui, sans-serif; margin: 0; color: #111; background: #fff; }}
header {{ position: sticky; top: 0; background: #f8fafc; border-bottom: 1px solid #cbd5e1; padding: 8px 16px; z-index: 1; }}
h1 {{ font-size: 16px; margin: 0 0 4px; }}
.status {{ font-weight: 600; color: {color}; }}
#info {{ font-family: ui-monospace, monospace; color: #334155; min-height: 1.2em; }}
.legend span {{ margin-right: 14px; }}
svg text {{ font: 11px ui-monospace, monospace; fill: #1e293b; }}
svg .lane-name {{ font: bold 13px system-ui, sans-serif; }}
svg .time {{ fill: #64748b; }}
.lane {{ stroke: #334155; stroke-width: 2; }}
.lane.paused {{ stroke-dasharray: 4 4; stroke: #94a3b8; }}
.tick {{ stroke: #e2e8f0; stroke-width: 1; }}
.arrow {{ stroke: #2563eb; stroke-width: 1.4; fill: none; }}
.lost {{ stroke: #dc2626; stroke-width: 1.4; stroke-dasharray: 3 3; fill: none; }}
.kill {{ stroke: #dc2626; stroke-width: 3; }}
.restart {{ fill: #16a34a; }}
.fault {{ fill: #dc2626; }}
.masked {{ fill: #cbd5e1; }}
.partition {{ fill: #ea580c; }}
.heal {{ fill: #fff; stroke: #ea580c; stroke-width: 2; }}
.panic {{ fill: #b91c1c; stroke: #450a0a; stroke-width: 2; }}
.msg {{ fill: #2563eb; }}
.drop {{ fill: #dc2626; }}
.note {{ fill: #64748b; }}
.ev {{ cursor: pointer; }}
.ev.selected circle, .ev.selected path {{ stroke: #f59e0b; stroke-width: 3; }}
.cut {{ fill: #b45309; }}
</style></head>
<body>
<header>
<h1>{title}</h1>
<div>status: <span class="status">{status}</span> &middot; {nodes} nodes &middot; {rows} events drawn of {events} &middot; {arrows} messages &middot; virtual time {elapsed}</div>
<div class="legend"><span style="color:#dc2626">&#9830; fault</span><span style="color:#dc2626">&#10005; kill</span><span style="color:#16a34a">&#9650; restart</span><span style="color:#b91c1c">&#11044; panic</span><span style="color:#ea580c">&#9632; partition / clog</span><span style="color:#2563eb">&#8594; message</span><span style="color:#94a3b8">- - paused</span></div>
<div id="info">click an event for its details</div>
</header>
<main>
{svg}</main>
<script>
document.querySelectorAll('.ev').forEach(function (g) {{
  g.addEventListener('click', function () {{
    document.querySelectorAll('.ev.selected').forEach(function (s) {{ s.classList.remove('selected'); }});
    g.classList.add('selected');
    document.getElementById('info').textContent = g.getAttribute('data-text');
  }});
}});
</script>
</body></html>
"#,
        title = escape(&title),
        color = if result.passed() {
            "#16a34a"
        } else {
            "#dc2626"
        },
        status = escape(&status),
        nodes = trace.nodes.len(),
        events = trace.events.len(),
        elapsed = crate::duration::short(result.elapsed_ns),
    );
    html
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_protocol::{FaultNote, NetNote, Note, PackedAddr, Status};

    fn event(index: u64, lane: usize, kind: TraceKind, note: Option<Note>) -> Event {
        Event {
            index,
            time_ns: index * 1_000_000,
            actor: lane,
            lane,
            kind,
            note,
            what: format!("{kind:?} <&>"),
        }
    }

    #[test]
    fn a_dead_node_has_no_lane_until_it_restarts_and_messages_are_arrows() {
        let addr = |node: u32| PackedAddr::pack(format!("10.0.0.{node}:1").parse().unwrap());
        let (from, to) = (addr(1), addr(2));
        let send = Note::Net(NetNote::UdpSend { from, to, len: 5 });
        let recv = Note::Net(NetNote::UdpRecv { from, to, len: 5 });
        let fault = Note::Fault(FaultNote::Applied { id: Some(0) });
        let trace = Trace {
            events: vec![
                event(0, 1, TraceKind::Create, None),
                event(1, 2, TraceKind::Create, None),
                event(2, 1, TraceKind::Note, Some(send)),
                event(3, 2, TraceKind::Note, Some(recv)),
                event(4, 2, TraceKind::Kill, None),
                event(5, 1, TraceKind::Note, Some(fault)),
                event(6, 2, TraceKind::Restart, None),
            ],
            nodes: [(0, "sup".into()), (1, "a".into()), (2, "b".into())].into(),
            cut: false,
        };
        let result = SeedResult {
            status: Status::Pass,
            ..SeedResult::default()
        };
        let html = render(&trace, &result, &Filter::default(), 100).unwrap();
        assert_eq!(html.matches(r#"<line class="arrow""#).count(), 1);
        // Lane b: created at row 1, running through the kill row (4), absent at row 5,
        // running again from the restart (row 6).
        let x = lane_x(2);
        let want = format!(
            r#"<line class="lane" x1="{x}" y1="{}" x2="{x}" y2="{}"/>"#,
            row_y(1) - ROW / 2,
            row_y(4) + ROW / 2
        );
        assert!(html.contains(&want), "{html}");
        let again = format!(
            r#"<line class="lane" x1="{x}" y1="{}" x2="{x}" y2="{}"/>"#,
            row_y(6) - ROW / 2,
            row_y(6) + ROW / 2
        );
        assert!(html.contains(&again), "{html}");
        assert!(html.contains("&lt;&amp;&gt;") && !html.contains("<&>"));
        let cut = render(&trace, &result, &Filter::default(), 3).unwrap();
        assert!(cut.contains("cut off after 3 events"));
    }
}
