//! `crashtest view`: a run as an HTML space-time diagram a person can read without
//! narrowing it by hand.
//!
//! Nodes are vertical lanes and virtual time runs downwards, in proportion: the scale is set
//! so that the run's typical gap between two drawn events is a few pixels. A quiet stretch
//! longer than a few typical gaps is collapsed to a fixed band that says how long it was, so
//! a run of bursts and long sleeps still fits on a page. Events at one instant on different
//! lanes share a line; on one lane they are pushed apart just enough to stay legible (a
//! labelled mark needs a line of text, a message dot a few pixels), and everything below
//! moves down with them, so the drawing keeps the trace's order.
//!
//! A lane is solid while its node runs, dashed while paused, and absent while dead. Messages
//! are arrows from send to delivery (paired by [`crate::messages`]); a message dropped on
//! arrival is a red dashed arrow, one lost on the way a red stub. Faults are red diamonds,
//! kills red crosses, restarts green triangles, panics red discs, partitions and clogs orange
//! squares (hollow when they end). Lanes are as wide as their labels need, up to a cap; a
//! label cut at the cap, and every mark, shows its whole text on hover, and a click keeps it
//! in the panel at the top. The header jumps to the failure and to each fault, and filters by
//! node and by kind of event.
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

/// Room left of the first lane, for the time axis.
const LEFT: usize = 110;
/// Room above the first event, for the lanes' names.
const TOP: usize = 50;
/// Narrowest and widest lane; a lane in between is as wide as its longest label.
const LANE_MIN: usize = 170;
const LANE_MAX: usize = 400;
/// The width of one character of a label (11px monospace), for sizing lanes and cutting.
const CHAR: f64 = 6.7;
/// What the run's median gap between drawn events becomes on the page.
const TYPICAL_GAP: f64 = 6.0;
/// A gap that would be taller than this is collapsed into a band of `COLLAPSED` pixels.
const LONGEST_GAP: f64 = 48.0;
const COLLAPSED: f64 = 26.0;
/// The least distance between two labelled marks on one lane: a line of text.
const LABELLED: f64 = 14.0;

/// Runs the seed with its trace, writes the diagram and says where.
pub(crate) fn run(args: &ViewArgs) -> anyhow::Result<ExitCode> {
    let target = crate::target::resolve(&args.target.select, &args.target.test)?;
    let (result, trace) = trace::record(
        &target,
        args.seed,
        &args.branch,
        args.target.seed_timeout,
        None,
    )?;
    let html = render(&trace, &result, &args.filter, args.max_events)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_file(&target.test, args));
    std::fs::write(&out, html).with_context(|| format!("cannot write {}", out.display()))?;
    let shown = std::fs::canonicalize(&out).unwrap_or(out);
    let failure = match result.headline() {
        headline if headline.is_empty() => String::new(),
        headline => format!(" ({headline})"),
    };
    println!(
        "seed {} of {}: {}{failure}; diagram written to {} (open file://{})",
        args.seed,
        target.test,
        result.status,
        shown.display(),
        shown.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A stretch of time with nothing drawn, collapsed to a band.
#[derive(Debug, PartialEq)]
struct Gap {
    /// The band's top and bottom.
    top: f64,
    bottom: f64,
    /// How much virtual time it stands for.
    ns: u64,
}

/// A piece of a lane: from `top` to `bottom` the node was running or paused.
#[derive(Debug, PartialEq)]
struct Segment {
    column: usize,
    life: Life,
    top: f64,
    bottom: f64,
}

/// Where everything goes.
struct Layout<'a> {
    /// The events drawn, with their height on the page.
    rows: Vec<(&'a Event, f64)>,
    /// Height of each drawn event, by position in the trace.
    y_of: BTreeMap<usize, f64>,
    gaps: Vec<Gap>,
    segments: Vec<Segment>,
    /// Where the drawing ends.
    bottom: f64,
    /// Whether `max_events` cut the diagram short.
    cut: bool,
}

/// Whether an event is drawn as a dot without a label: network traffic and disk operations,
/// the bulk of a run, which may overlap (each shows its text on hover). Everything else gets
/// a label and room for it.
fn is_dot(event: &Event) -> bool {
    event.describe().0 == Mark::Message
        || matches!(event.note, Some(crashtest_protocol::Note::Disk(_)))
}

/// How tall the time axis is drawn, before labelled marks push it apart: a few screens.
const TIME_AXIS: f64 = 3000.0;

/// How many pixels the gaps between `times` take at `per_ns` pixels per nanosecond, long
/// ones collapsed.
fn axis_height(times: &[u64], per_ns: f64) -> f64 {
    times
        .windows(2)
        .map(|w| {
            let advance = (w[1] - w[0]) as f64 * per_ns;
            if advance > LONGEST_GAP {
                COLLAPSED
            } else {
                advance
            }
        })
        .sum()
}

/// The page's scale, pixels per nanosecond: the one at which the gaps between successive
/// drawn events fill `TIME_AXIS` pixels, or a gap of the run's median length is
/// `TYPICAL_GAP` pixels if that is shorter (a short run is not stretched). Found by
/// bisection on a log scale (the height grows with the scale but for the collapsing of
/// gaps, which only ever makes a page shorter).
fn scale(times: &[u64]) -> f64 {
    let mut gaps: Vec<u64> = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|gap| *gap > 0)
        .collect();
    if gaps.is_empty() {
        return 0.0;
    }
    gaps.sort_unstable();
    let typical = TYPICAL_GAP / gaps[gaps.len() / 2] as f64;
    if axis_height(times, typical) <= TIME_AXIS {
        return typical;
    }
    let (mut low, mut high) = (typical.ln() - 60.0, typical.ln());
    for _ in 0..60 {
        let middle = (low + high) / 2.0;
        if axis_height(times, middle.exp()) > TIME_AXIS {
            high = middle;
        } else {
            low = middle;
        }
    }
    low.exp()
}

impl<'a> Layout<'a> {
    /// Follows every node's life through the whole trace, and places the events to draw.
    fn new(
        trace: &'a Trace,
        lanes: &[usize],
        column: &BTreeMap<usize, usize>,
        filter: &Filter,
        max_events: usize,
    ) -> Layout<'a> {
        let drawn = |event: &Event| {
            !event.is_scheduler()
                && event.describe().0 != Mark::Task
                && column.contains_key(&event.lane)
                && trace::in_window(filter, event.time_ns)
        };
        let mut chosen: Vec<usize> = Vec::new();
        let mut cut = false;
        for (position, event) in trace.events.iter().enumerate() {
            if drawn(event) {
                if chosen.len() == max_events {
                    cut = true;
                    break;
                }
                chosen.push(position);
            }
        }
        let times: Vec<u64> = chosen.iter().map(|p| trace.events[*p].time_ns).collect();
        let per_ns = scale(&times);
        let mut layout = Layout {
            rows: Vec::new(),
            y_of: BTreeMap::new(),
            gaps: Vec::new(),
            segments: Vec::new(),
            bottom: TOP as f64,
            cut,
        };
        let mut life: Vec<Life> = lanes
            .iter()
            .map(|l| if *l == 0 { Life::Running } else { Life::Absent })
            .collect();
        let mut since: Vec<f64> = vec![TOP as f64; lanes.len()];
        let mut lane_last: Vec<Option<f64>> = vec![None; lanes.len()];
        let mut y = TOP as f64;
        let mut last_time = None;
        let last_position = chosen.last().copied();
        let mut next = chosen.iter().peekable();
        for (position, event) in trace.events.iter().enumerate() {
            if last_position.is_none_or(|last| position > last) {
                break;
            }
            let is_drawn = next.peek().is_some_and(|p| **p == position);
            if is_drawn {
                next.next();
                if let Some(previous) = last_time {
                    let ns = event.time_ns - previous;
                    let advance = ns as f64 * per_ns;
                    if advance > LONGEST_GAP {
                        layout.gaps.push(Gap {
                            top: y + 4.0,
                            bottom: y + COLLAPSED - 4.0,
                            ns,
                        });
                        y += COLLAPSED;
                    } else {
                        y += advance;
                    }
                } else {
                    y += LABELLED;
                }
                let c = column[&event.lane];
                if !is_dot(event) {
                    if let Some(previous) = lane_last[c] {
                        y = y.max(previous + LABELLED);
                    }
                    lane_last[c] = Some(y);
                }
                last_time = Some(event.time_ns);
                layout.y_of.insert(position, y);
                layout.rows.push((event, y));
            }
            if let (Some(now), Some(&c)) = (event.life(), column.get(&event.lane))
                && now != life[c]
            {
                layout.segments.push(Segment {
                    column: c,
                    life: life[c],
                    top: since[c],
                    bottom: y,
                });
                life[c] = now;
                since[c] = y;
            }
        }
        layout.bottom = y + LABELLED;
        for (c, life) in life.into_iter().enumerate() {
            layout.segments.push(Segment {
                column: c,
                life,
                top: since[c],
                bottom: layout.bottom,
            });
        }
        layout
            .segments
            .retain(|s| s.life != Life::Absent && s.bottom > s.top);
        layout
    }
}

/// Each lane's width: enough for its longest label, within `LANE_MIN..=LANE_MAX`.
fn lane_widths(layout: &Layout<'_>, column: &BTreeMap<usize, usize>) -> Vec<usize> {
    let mut widths = vec![LANE_MIN; column.len()];
    for (event, _) in &layout.rows {
        if is_dot(event) {
            continue;
        }
        let chars = event.describe().1.chars().count();
        let c = column[&event.lane];
        let wanted = (chars as f64 * CHAR).ceil() as usize + 41;
        widths[c] = widths[c].max(wanted.min(LANE_MAX));
    }
    widths
}

/// The x of each lane, from the widths.
fn lane_xs(widths: &[usize]) -> Vec<usize> {
    let mut x = LEFT;
    widths
        .iter()
        .map(|w| {
            let at = x + 24;
            x += w;
            at
        })
        .collect()
}

/// The event a reader jumps to as "the failure": the first panic drawn, else the last
/// event drawn (a failed check or a crash ends the run there).
fn failure_row(layout: &Layout<'_>, result: &SeedResult) -> Option<u64> {
    if result.passed() {
        return None;
    }
    layout
        .rows
        .iter()
        .find(|(event, _)| event.kind == TraceKind::Panic)
        .or(layout.rows.last())
        .map(|(event, _)| event.index)
}

/// The kinds a reader can hide, by the marks they cover.
const KINDS: [(&str, &str); 7] = [
    ("faults", "faults"),
    ("life", "kills, restarts, pauses"),
    ("panic", "panics"),
    ("net", "partitions and clogs"),
    ("msg", "messages"),
    ("disk", "disk operations"),
    ("note", "notes and clocks"),
];

fn kind_class(event: &Event) -> &'static str {
    if matches!(event.note, Some(crashtest_protocol::Note::Disk(_))) {
        return "disk";
    }
    match event.describe().0 {
        Mark::Fault | Mark::Masked => "faults",
        Mark::Kill | Mark::Restart | Mark::Pause | Mark::Resume | Mark::Create => "life",
        Mark::Panic => "panic",
        Mark::Partition | Mark::Heal => "net",
        Mark::Message => "msg",
        Mark::Clock | Mark::Note | Mark::Task | Mark::Scheduler => "note",
    }
}

/// Whether the header's jump list offers the event: what changed the run.
fn is_landmark(mark: Mark) -> bool {
    matches!(
        mark,
        Mark::Fault | Mark::Kill | Mark::Restart | Mark::Pause | Mark::Partition | Mark::Panic
    )
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
    let widths = lane_widths(&layout, &column);
    let xs = lane_xs(&widths);
    let width = LEFT + widths.iter().sum::<usize>() + 20;
    let height = layout.bottom as usize + if layout.cut { 40 } else { 10 };
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
    );
    svg.push_str(
        r##"<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#2563eb"/></marker></defs>"##,
    );
    svg.push('\n');
    draw_times(&mut svg, &layout, width);
    draw_gaps(&mut svg, &layout.gaps, width);
    for (c, lane) in lanes.iter().enumerate() {
        let _ = writeln!(
            svg,
            r#"<text class="lane-name n-{lane}" x="{}" y="{}" text-anchor="middle">{}</text>"#,
            xs[c],
            TOP - 22,
            escape(&trace.nodes[lane])
        );
    }
    for segment in &layout.segments {
        let class = match segment.life {
            Life::Paused => "lane paused",
            _ => "lane",
        };
        let _ = writeln!(
            svg,
            r#"<line class="{class} n-{lane}" x1="{x}" y1="{:.1}" x2="{x}" y2="{:.1}"/>"#,
            segment.top,
            segment.bottom,
            lane = lanes[segment.column],
            x = xs[segment.column],
        );
    }
    for arrow in &arrows {
        draw_arrow(&mut svg, arrow, &trace.events, &layout.y_of, &column, &xs);
    }
    for (event, y) in &layout.rows {
        let c = column[&event.lane];
        let room = ((widths[c] - 40) as f64 / CHAR) as usize;
        draw_event(&mut svg, event, xs[c], *y, room);
    }
    if layout.cut {
        let _ = writeln!(
            svg,
            r#"<text class="cut" x="{LEFT}" y="{:.0}">cut off after {max_events} events: narrow with --from/--until/--node, or raise --max-events</text>"#,
            layout.bottom + 20.0
        );
    }
    svg.push_str("</svg>\n");
    let controls = controls(trace, result, &layout, &lanes);
    Ok(page(
        trace,
        result,
        &svg,
        &controls,
        layout.rows.len(),
        arrows.len(),
    ))
}

/// The time at the left wherever it changes, when there is room for it, with a faint rule.
fn draw_times(svg: &mut String, layout: &Layout<'_>, width: usize) {
    let mut last: Option<(u64, f64)> = None;
    for (event, y) in &layout.rows {
        let room = last.is_none_or(|(time, at)| time != event.time_ns && y - at >= 14.0);
        if !room {
            continue;
        }
        last = Some((event.time_ns, *y));
        let _ = writeln!(
            svg,
            r#"<line class="tick" x1="{tick}" y1="{y:.1}" x2="{end}" y2="{y:.1}"/><text class="time" x="{label_x}" y="{text_y:.1}" text-anchor="end">{time}</text>"#,
            tick = LEFT - 6,
            end = width - 20,
            label_x = LEFT - 10,
            text_y = y + 4.0,
            time = crate::duration::short(event.time_ns),
        );
    }
}

/// Each collapsed stretch: a hatched band across the page that says how long it was.
fn draw_gaps(svg: &mut String, gaps: &[Gap], width: usize) {
    for gap in gaps {
        let _ = writeln!(
            svg,
            r#"<g class="gap"><rect x="4" y="{top:.1}" width="{w}" height="{h:.1}"/><text x="{LEFT}" y="{text_y:.1}">&#8942; {ns} with nothing drawn</text></g>"#,
            top = gap.top,
            w = width - 24,
            h = gap.bottom - gap.top,
            text_y = (gap.top + gap.bottom) / 2.0 + 4.0,
            ns = crate::duration::short(gap.ns),
        );
    }
}

/// Draws a message whose send is shown: a blue arrow to its delivery, a red dashed one to
/// where it was dropped, or a red stub towards where it was going if it was lost.
fn draw_arrow(
    svg: &mut String,
    arrow: &Arrow,
    events: &[Event],
    y_of: &BTreeMap<usize, f64>,
    column: &BTreeMap<usize, usize>,
    xs: &[usize],
) {
    let Some(&y1) = y_of.get(&arrow.from) else {
        return;
    };
    let from_lane = events[arrow.from].lane;
    let Some(&from_column) = column.get(&from_lane) else {
        return;
    };
    let x1 = xs[from_column];
    let end = |at: usize| {
        let lane = events[at].lane;
        Some((xs[*column.get(&lane)?], *y_of.get(&at)?, lane))
    };
    match arrow.to {
        Arrival::Delivered(at) => {
            if let Some((x2, y2, to)) = end(at) {
                let _ = writeln!(
                    svg,
                    r#"<line class="arrow k-msg n-{from_lane} n-{to}" x1="{x1}" y1="{y1:.1}" x2="{x2}" y2="{y2:.1}" marker-end="url(#head)"/>"#
                );
            }
        }
        Arrival::Dropped(at) => {
            if let Some((x2, y2, to)) = end(at) {
                let _ = writeln!(
                    svg,
                    r#"<line class="lost k-msg n-{from_lane} n-{to}" x1="{x1}" y1="{y1:.1}" x2="{x2}" y2="{y2:.1}"/>"#
                );
            }
        }
        Arrival::Lost(toward) => {
            let x2 = toward
                .and_then(|lane| column.get(&lane))
                .map_or(x1 + 60, |c| (x1 + xs[*c]) / 2);
            let y2 = y1 + 12.0;
            let _ = writeln!(
                svg,
                r##"<g class="k-msg n-{from_lane}"><line class="lost" x1="{x1}" y1="{y1:.1}" x2="{x2}" y2="{y2:.1}"/><text x="{}" y="{:.1}" fill="#dc2626">&#10005;</text></g>"##,
                x2 - 4,
                y2 + 4.0
            );
        }
    }
}

/// One event's mark, its label (cut to `room` characters; the whole text is its tooltip),
/// and the data the header's panel shows.
fn draw_event(svg: &mut String, event: &Event, cx: usize, cy: f64, room: usize) {
    let (mark, label) = event.describe();
    let title = escape(&format!(
        "#{} {}: {}",
        event.index,
        crate::duration::short(event.time_ns),
        if mark == Mark::Message || label == event.what {
            event.what.clone()
        } else {
            format!("{label} ({})", event.what)
        }
    ));
    let _ = write!(
        svg,
        r#"<g id="e{index}" class="ev m-{mark:?} k-{kind} n-{lane}" data-text="{title}"><title>{title}</title>"#,
        index = event.index,
        kind = kind_class(event),
        lane = event.lane,
    );
    let cx = cx as f64;
    let (top, bottom, left, right) = (cy - 6.0, cy + 6.0, cx - 6.0, cx + 6.0);
    let _ = match mark {
        Mark::Kill => write!(
            svg,
            r#"<path d="M{left},{top:.1} L{right},{bottom:.1} M{left},{bottom:.1} L{right},{top:.1}" class="kill"/>"#
        ),
        Mark::Restart => write!(
            svg,
            r#"<path d="M{cx},{top:.1} L{right},{bottom:.1} L{left},{bottom:.1} z" class="restart"/>"#
        ),
        Mark::Fault | Mark::Masked => write!(
            svg,
            r#"<path d="M{cx},{top:.1} L{right},{cy:.1} L{cx},{bottom:.1} L{left},{cy:.1} z" class="{class}"/>"#,
            class = if mark == Mark::Fault {
                "fault"
            } else {
                "masked"
            }
        ),
        Mark::Panic => write!(
            svg,
            r#"<circle cx="{cx}" cy="{cy:.1}" r="6" class="panic"/>"#
        ),
        Mark::Partition | Mark::Heal => write!(
            svg,
            r#"<rect x="{left}" y="{top:.1}" width="12" height="12" class="{class}"/>"#,
            class = if mark == Mark::Partition {
                "partition"
            } else {
                "heal"
            }
        ),
        Mark::Message => {
            let class = if messages::is_drop(event) {
                "drop"
            } else {
                "msg"
            };
            write!(
                svg,
                r#"<circle cx="{cx}" cy="{cy:.1}" r="2.5" class="{class}"/>"#
            )
        }
        _ if is_dot(event) => write!(
            svg,
            r#"<circle cx="{cx}" cy="{cy:.1}" r="2" class="disk"/>"#
        ),
        _ => write!(
            svg,
            r#"<circle cx="{cx}" cy="{cy:.1}" r="3.5" class="note"/>"#
        ),
    };
    if !is_dot(event) {
        let _ = write!(
            svg,
            r#"<text class="label" x="{:.0}" y="{:.1}">{}</text>"#,
            cx + 10.0,
            cy + 4.0,
            escape(&truncate(&label, room))
        );
    }
    svg.push_str("</g>\n");
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
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

/// The header's controls: jumps to the failure and to each fault, kill, restart, pause,
/// partition and panic, and the filters by node and by kind.
fn controls(trace: &Trace, result: &SeedResult, layout: &Layout<'_>, lanes: &[usize]) -> String {
    let mut html = String::new();
    html.push_str(r#"<div class="controls"><span class="group">jump to:"#);
    match failure_row(layout, result) {
        Some(index) => {
            let _ = write!(
                html,
                r##" <button id="to-failure" data-target="e{index}">the failure (#{index})</button>"##
            );
        }
        None => html.push_str(" <span class=\"muted\">no failure</span>"),
    }
    let landmarks: Vec<&(&Event, f64)> = layout
        .rows
        .iter()
        .filter(|(event, _)| is_landmark(event.describe().0))
        .collect();
    let faults = landmarks
        .iter()
        .filter(|(event, _)| event.describe().0 == Mark::Fault)
        .count();
    let _ = write!(
        html,
        r#" <button id="prev-fault">&#9664; fault</button><button id="next-fault">fault &#9654;</button> <select id="landmarks"><option value="">{} faults, {} events that changed the run&hellip;</option>"#,
        faults,
        landmarks.len()
    );
    for (event, _) in &landmarks {
        let (mark, label) = event.describe();
        let _ = write!(
            html,
            r#"<option value="e{index}" data-fault="{fault}">{time} {node}: {label}</option>"#,
            index = event.index,
            fault = mark == Mark::Fault,
            time = crate::duration::short(event.time_ns),
            node = escape(&trace.nodes[&event.lane]),
            label = escape(&truncate(&label, 70)),
        );
    }
    html.push_str("</select></span>");
    html.push_str(r#"<span class="group">nodes:"#);
    for lane in lanes {
        let _ = write!(
            html,
            r#" <label><input type="checkbox" checked data-hide="n-{lane}">{}</label>"#,
            escape(&trace.nodes[lane])
        );
    }
    html.push_str(r#"</span><span class="group">show:"#);
    for (class, what) in KINDS {
        let _ = write!(
            html,
            r#" <label><input type="checkbox" checked data-hide="k-{class}">{what}</label>"#
        );
    }
    html.push_str("</span></div>");
    html
}

/// CSS that hides each node's and kind's elements while the body has its `hide-` class.
fn filter_css(lanes: &[usize]) -> String {
    let mut css = String::new();
    for lane in lanes {
        let _ = writeln!(css, "body.hide-n-{lane} .n-{lane} {{ display: none; }}");
    }
    for (class, _) in KINDS {
        let _ = writeln!(css, "body.hide-k-{class} .k-{class} {{ display: none; }}");
    }
    css
}

fn page(
    trace: &Trace,
    result: &SeedResult,
    svg: &str,
    controls: &str,
    rows: usize,
    arrows: usize,
) -> String {
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
    let lanes: Vec<usize> = trace.nodes.keys().copied().collect();
    let mut html = String::new();
    let _ = write!(
        html,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 13px system-ui, sans-serif; margin: 0; color: #111; background: #fff; }}
header {{ position: sticky; top: 0; background: #f8fafc; border-bottom: 1px solid #cbd5e1; padding: 6px 16px; z-index: 1; }}
h1 {{ font-size: 16px; margin: 0 0 2px; }}
.status {{ font-weight: 600; color: {color}; }}
#info {{ font-family: ui-monospace, monospace; color: #334155; min-height: 1.2em; white-space: pre-wrap; }}
.legend span {{ margin-right: 14px; }}
.controls {{ margin: 3px 0; }}
.controls .group {{ margin-right: 18px; white-space: nowrap; display: inline-block; }}
.controls label {{ margin-left: 6px; }}
.controls select {{ max-width: 420px; }}
.muted {{ color: #64748b; }}
svg text {{ font: 11px ui-monospace, monospace; fill: #1e293b; }}
svg .label {{ paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }}
svg .lane-name {{ font: bold 13px system-ui, sans-serif; }}
svg .time {{ fill: #64748b; }}
.lane {{ stroke: #334155; stroke-width: 2; }}
.lane.paused {{ stroke-dasharray: 4 4; stroke: #94a3b8; }}
.tick {{ stroke: #f1f5f9; stroke-width: 1; }}
.gap rect {{ fill: #f1f5f9; stroke: #cbd5e1; stroke-dasharray: 6 3; }}
.gap text {{ fill: #475569; font-style: italic; }}
.arrow {{ stroke: #2563eb; stroke-width: 1.2; fill: none; opacity: 0.75; }}
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
.disk {{ fill: #a16207; }}
.ev {{ cursor: pointer; }}
.ev:hover text, .ev.selected text {{ font-weight: bold; }}
.ev.selected circle, .ev.selected path, .ev.selected rect {{ stroke: #f59e0b; stroke-width: 3; }}
.cut {{ fill: #b45309; }}
{filters}</style></head>
<body>
<header>
<h1>{title}</h1>
<div>status: <span class="status">{status}</span> &middot; {nodes} nodes &middot; {rows} events drawn of {events} &middot; {arrows} messages &middot; virtual time {elapsed} (down the page in proportion; quiet stretches collapsed)</div>
{controls}
<div class="legend"><span style="color:#dc2626">&#9830; fault</span><span style="color:#dc2626">&#10005; kill</span><span style="color:#16a34a">&#9650; restart</span><span style="color:#b91c1c">&#11044; panic</span><span style="color:#ea580c">&#9632; partition / clog</span><span style="color:#2563eb">&#8594; message</span><span style="color:#94a3b8">- - paused</span></div>
<div id="info">hover over an event for its whole text; click to keep it here</div>
</header>
<main>
{svg}</main>
<script>
var info = document.getElementById('info');
var kept = info.textContent;
function select(g) {{
  document.querySelectorAll('.ev.selected').forEach(function (s) {{ s.classList.remove('selected'); }});
  g.classList.add('selected');
  kept = g.getAttribute('data-text');
  info.textContent = kept;
}}
function jump(id) {{
  var g = document.getElementById(id);
  if (!g) return;
  var header = document.querySelector('header').offsetHeight;
  var top = g.getBoundingClientRect().top + window.scrollY - header - 80;
  window.scrollTo({{ top: Math.max(0, top) }});
  select(g);
}}
document.querySelectorAll('.ev').forEach(function (g) {{
  g.addEventListener('click', function () {{ select(g); }});
  g.addEventListener('mouseenter', function () {{ info.textContent = g.getAttribute('data-text'); }});
  g.addEventListener('mouseleave', function () {{ info.textContent = kept; }});
}});
var failure = document.getElementById('to-failure');
if (failure) failure.addEventListener('click', function () {{ jump(failure.getAttribute('data-target')); }});
var landmarks = document.getElementById('landmarks');
landmarks.addEventListener('change', function () {{ if (landmarks.value) jump(landmarks.value); }});
var faults = Array.prototype.filter.call(landmarks.options, function (o) {{ return o.getAttribute('data-fault') === 'true'; }});
var at = -1;
function step(by) {{
  if (!faults.length) return;
  at = (at + by + faults.length) % faults.length;
  faults[at].selected = true;
  jump(faults[at].value);
}}
document.getElementById('next-fault').addEventListener('click', function () {{ step(1); }});
document.getElementById('prev-fault').addEventListener('click', function () {{ step(-1); }});
document.querySelectorAll('input[data-hide]').forEach(function (box) {{
  box.addEventListener('change', function () {{
    document.body.classList.toggle('hide-' + box.getAttribute('data-hide'), !box.checked);
  }});
}});
if (location.hash === '#failure' && failure) jump(failure.getAttribute('data-target'));
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
        filters = filter_css(&lanes),
    );
    html
}

/// `crashtest-TEST-seed-SEED.html` (`TEST` the test's own name, without its module path),
/// with `-branch-PATH` before `.html` for a branch (the path's `:` and `,` as `-` and `_`):
/// another test's diagram of the same seed, or a branch's, never overwrites this one.
fn default_file(test: &str, args: &ViewArgs) -> PathBuf {
    let name = test.rsplit("::").next().unwrap_or(test);
    let branch = match args
        .branch
        .branch
        .as_ref()
        .filter(|path| !path.0.is_empty())
    {
        None => String::new(),
        Some(path) => format!(
            "-branch-{}",
            path.to_string().replace(':', "-").replace(',', "_")
        ),
    };
    PathBuf::from(format!("crashtest-{name}-seed-{}{branch}.html", args.seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashtest_protocol::{FaultNote, NetNote, Note, PackedAddr, Status};

    fn view_args(args: &[&str]) -> ViewArgs {
        use clap::Parser;
        let words = ["crashtest", "view", "t", "3"].iter().chain(args);
        match crate::cli::Cli::try_parse_from(words).unwrap().command {
            crate::cli::Command::View(args) => args,
            _ => unreachable!("parsed as view"),
        }
    }

    #[test]
    fn a_diagram_is_named_after_its_test_seed_and_branch() {
        assert_eq!(
            default_file("store::agree", &view_args(&[])),
            PathBuf::from("crashtest-agree-seed-3.html")
        );
        assert_eq!(
            default_file("store::agree", &view_args(&["--branch", "1500:7,2000:3"])),
            PathBuf::from("crashtest-agree-seed-3-branch-1500-7_2000-3.html")
        );
    }

    fn event(index: u64, time_ms: u64, lane: usize, kind: TraceKind, note: Option<Note>) -> Event {
        Event {
            index,
            time_ns: time_ms * 1_000_000,
            actor: lane,
            lane,
            kind,
            note,
            what: format!("{kind:?} <&>"),
            peer_name: None,
        }
    }

    fn trace(events: Vec<Event>) -> Trace {
        Trace {
            events,
            nodes: [(0, "sup".into()), (1, "a".into()), (2, "b".into())].into(),
            cut: false,
        }
    }

    fn placed(trace: &Trace) -> Layout<'_> {
        let column = [(0, 0), (1, 1), (2, 2)].into();
        Layout::new(trace, &[0, 1, 2], &column, &Filter::default(), 1000)
    }

    fn passed() -> SeedResult {
        SeedResult {
            status: Status::Pass,
            ..SeedResult::default()
        }
    }

    #[test]
    fn a_dead_node_has_no_lane_until_it_restarts_and_messages_are_arrows() {
        let addr = |node: u32| PackedAddr::pack(format!("10.0.0.{node}:1").parse().unwrap());
        let (from, to) = (addr(1), addr(2));
        let send = Note::Net(NetNote::UdpSend { from, to, len: 5 });
        let recv = Note::Net(NetNote::UdpRecv { from, to, len: 5 });
        let fault = Note::Fault(FaultNote::Applied { id: Some(0) });
        let trace = trace(vec![
            event(0, 0, 1, TraceKind::Create, None),
            event(1, 1, 2, TraceKind::Create, None),
            event(2, 2, 1, TraceKind::Note, Some(send)),
            event(3, 3, 2, TraceKind::Note, Some(recv)),
            event(4, 4, 2, TraceKind::Kill, None),
            event(5, 5, 1, TraceKind::Note, Some(fault)),
            event(6, 6, 2, TraceKind::Restart, None),
        ]);
        let layout = placed(&trace);
        let y = |position: usize| layout.y_of[&position];
        let lane_b: Vec<(f64, f64)> = layout
            .segments
            .iter()
            .filter(|s| s.column == 2)
            .map(|s| (s.top, s.bottom))
            .collect();
        assert_eq!(lane_b, [(y(1), y(4)), (y(6), layout.bottom)]);
        let html = render(&trace, &passed(), &Filter::default(), 100).unwrap();
        assert_eq!(html.matches(r#"<line class="arrow "#).count(), 1);
        assert!(html.contains("&lt;&amp;&gt;") && !html.contains("<&>"));
        let cut = render(&trace, &passed(), &Filter::default(), 3).unwrap();
        assert!(cut.contains("cut off after 3 events"));
    }

    #[test]
    fn time_runs_down_in_proportion_and_a_long_quiet_stretch_collapses() {
        // Notes 1 ms apart on the three lanes in turn, then an hour of nothing, then one more.
        let mut events: Vec<Event> = (0..6)
            .map(|i| event(i, i, i as usize % 3, TraceKind::Note, None))
            .collect();
        events.push(event(6, 3_600_000, 1, TraceKind::Note, None));
        let trace = trace(events);
        let layout = placed(&trace);
        let ys: Vec<f64> = (0..7).map(|p| layout.y_of[&p]).collect();
        let steps: Vec<f64> = ys.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            steps[..5].iter().all(|s| (s - steps[0]).abs() < 1e-6),
            "{steps:?}"
        );
        assert_eq!(layout.gaps.len(), 1, "the hour collapsed");
        assert_eq!(layout.gaps[0].ns, 3_600_000_000_000 - 5_000_000);
        assert!(steps[5] <= COLLAPSED + 1e-6, "{steps:?}");
    }

    #[test]
    fn events_of_one_instant_share_a_line_across_lanes_and_stack_on_one() {
        let trace = trace(vec![
            event(0, 0, 1, TraceKind::Note, None),
            event(1, 0, 2, TraceKind::Note, None),
            event(2, 0, 2, TraceKind::Note, None),
        ]);
        let layout = placed(&trace);
        let (a, b, c) = (layout.y_of[&0], layout.y_of[&1], layout.y_of[&2]);
        assert_eq!(a, b);
        assert_eq!(c - b, LABELLED);
    }

    #[test]
    fn a_lane_is_as_wide_as_its_labels_and_every_label_is_whole_on_hover() {
        let mut long = event(0, 0, 1, TraceKind::Note, None);
        long.what = "x".repeat(45);
        let mut longest = event(1, 1, 2, TraceKind::Note, None);
        longest.what = "y".repeat(200);
        let trace = trace(vec![long, longest]);
        let html = render(&trace, &passed(), &Filter::default(), 100).unwrap();
        assert!(
            html.contains(&format!(">{}</text>", "x".repeat(45))),
            "not cut"
        );
        let shown = ((LANE_MAX - 40) as f64 / CHAR) as usize;
        assert!(html.contains(&format!(">{}…</text>", "y".repeat(shown - 1))));
        assert!(html.contains(&format!("<title>#1 1ms: {}</title>", "y".repeat(200))));
    }

    #[test]
    fn the_header_jumps_to_the_panic_and_each_fault_and_filters_nodes_and_kinds() {
        let fault = Note::Fault(FaultNote::Applied { id: Some(0) });
        let trace = trace(vec![
            event(0, 0, 1, TraceKind::Note, Some(fault)),
            event(1, 1, 2, TraceKind::Panic, None),
            event(2, 2, 1, TraceKind::Note, None),
        ]);
        let failed = SeedResult {
            status: Status::Fail,
            failure: Some("panicked at a.rs:1:1: no".into()),
            ..SeedResult::default()
        };
        let html = render(&trace, &failed, &Filter::default(), 100).unwrap();
        assert!(html.contains(r#"<button id="to-failure" data-target="e1">"#));
        assert!(html.contains(r#"<option value="e0" data-fault="true">"#));
        assert!(html.contains(r#"<g id="e1" class="ev m-Panic k-panic n-2""#));
        for hide in ["n-0", "n-1", "n-2", "k-faults", "k-msg", "k-disk"] {
            assert!(html.contains(&format!(r#"data-hide="{hide}""#)), "{hide}");
            assert!(html.contains(&format!("body.hide-{hide} .{hide} {{ display: none; }}")));
        }
        let html = render(&trace, &passed(), &Filter::default(), 100).unwrap();
        assert!(!html.contains(r#"id="to-failure""#) && html.contains("no failure"));
    }
}
