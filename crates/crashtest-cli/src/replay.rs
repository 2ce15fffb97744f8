//! `crashtest replay`: a seed's trace as text, one column per node.
//!
//! Each row is one event, written in the column of the node it belongs to, with a marker in
//! front (`X` kill, `^` restart or upgrade, `=` pause, `>` resume, `!` panic, `*` injected
//! fault, `-` masked fault, `~` clock change, `#` partition or clog, `&` its end, `+` node
//! created, `@` network traffic, `.` a disk or other component note). The other
//! columns show each node's state at that moment: `|` running, `:` paused, blank when dead
//! or not yet created, so a crash and its restart read as a gap in a lane.

use std::collections::BTreeMap;
use std::fmt::Write;

use crashtest_protocol::env::BranchPath;

use crate::cli::{Filter, ReplayArgs};
use crate::results::SeedResult;
use crate::trace::{self, Life, Trace};

/// Runs the seed with its trace and prints the columns.
pub(crate) fn run(args: &ReplayArgs) -> anyhow::Result<std::process::ExitCode> {
    args.filter.check()?;
    let target = crate::target::resolve(&args.target.select, &args.target.test)?;
    let (result, trace) = trace::record(
        &target,
        args.seed,
        &args.branch,
        args.target.seed_timeout,
        args.save_trace.as_deref(),
    )?;
    let text = render(
        &trace,
        &result,
        args.branch.branch.as_ref(),
        &args.filter,
        args.all,
        usize::from(args.width),
    )?;
    print!("{text}");
    println!(
        "reproduce: {}",
        target.reproduce(&crashtest_protocol::reproduce::assignments(
            [(crashtest_protocol::env::SEED, args.seed.to_string())]
                .into_iter()
                .chain(args.branch.env())
        ))
    );
    Ok(if result.passed() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    })
}

/// What a node's column shows in other nodes' rows.
fn filler(life: Life) -> char {
    match life {
        Life::Absent => ' ',
        Life::Running => '|',
        Life::Paused => ':',
    }
}

/// The text of a replay.
pub(crate) fn render(
    trace: &Trace,
    result: &SeedResult,
    branch: Option<&BranchPath>,
    filter: &Filter,
    all: bool,
    width: usize,
) -> anyhow::Result<String> {
    let lanes = trace.lanes(filter)?;
    let column: BTreeMap<usize, usize> = lanes.iter().enumerate().map(|(c, l)| (*l, c)).collect();
    let mut state: BTreeMap<usize, Life> = trace.nodes.keys().map(|n| (*n, Life::Absent)).collect();
    state.insert(0, Life::Running);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "seed {}{} of {}: {}{}",
        result.seed,
        match branch {
            Some(path) if !path.0.is_empty() => format!(" along branch {path}"),
            _ => String::new(),
        },
        result.test,
        result.status.name().to_uppercase(),
        if result.passed() {
            String::new()
        } else {
            format!(": {}", result.headline())
        }
    );
    let mut header = format!("{:>12} ", "time");
    for lane in &lanes {
        header.push_str(&fit(&trace.nodes[lane], width));
    }
    let _ = writeln!(out, "{}", header.trim_end());
    let _ = writeln!(out, "{}", "-".repeat(13 + width * lanes.len()));
    let mut last_time = None;
    let mut shown = 0;
    for event in &trace.events {
        if let Some(life) = event.life() {
            state.insert(event.lane, life);
        }
        let visible = (all || !event.is_scheduler())
            && column.contains_key(&event.lane)
            && trace::in_window(filter, event.time_ns);
        if !visible {
            continue;
        }
        shown += 1;
        let time = if last_time == Some(event.time_ns) {
            String::new()
        } else {
            crate::duration::short(event.time_ns)
        };
        last_time = Some(event.time_ns);
        let mut row = format!("{time:>12} ");
        for lane in &lanes {
            if *lane == event.lane {
                let (mark, label) = event.describe();
                row.push_str(&fit(&format!("{} {label}", mark.symbol()), width));
            } else {
                row.push_str(&fit(&filler(state[lane]).to_string(), width));
            }
        }
        let _ = writeln!(out, "{}", row.trim_end());
    }
    let _ = writeln!(out, "{}", "-".repeat(13 + width * lanes.len()));
    let _ = writeln!(
        out,
        "{shown} of {} events shown{}",
        trace.events.len(),
        if all {
            ""
        } else {
            " (scheduler polls and clock jumps hidden; --all shows them)"
        }
    );
    if let Some(note) = trace::death_note(trace, result) {
        let _ = writeln!(out, "{note}");
    }
    if let Some(failure) = &result.failure {
        let _ = writeln!(out, "failure:");
        for line in failure
            .lines()
            .take_while(|l| !l.trim_start().starts_with("last "))
        {
            let _ = writeln!(out, "  {}", line.trim_end());
        }
    }
    Ok(out)
}

/// `text` cut or padded to `width` characters, with a space to the next column.
fn fit(text: &str, width: usize) -> String {
    let room = width - 1;
    let count = text.chars().count();
    if count > room {
        let cut: String = text.chars().take(room - 1).collect();
        format!("{cut}~ ")
    } else {
        format!("{text}{} ", " ".repeat(room - count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Event;
    use crashtest_protocol::{FaultNote, Note, Status, TraceKind};

    fn event(index: u64, time_ns: u64, lane: usize, kind: TraceKind, what: &str) -> Event {
        let fault = Note::Fault(FaultNote::Applied { id: Some(index) });
        Event {
            index,
            time_ns,
            actor: 0,
            lane,
            kind,
            note: (kind == TraceKind::Note).then_some(fault),
            what: what.into(),
            peer_name: None,
        }
    }

    fn sample() -> Trace {
        Trace {
            events: vec![
                event(0, 0, 1, TraceKind::Create, "create n1"),
                event(1, 0, 1, TraceKind::Poll, "poll t1"),
                event(2, 5_000_000, 1, TraceKind::Note, "fault: kill store"),
                event(3, 5_000_000, 1, TraceKind::Kill, "KILL n1"),
                event(4, 9_000_000, 0, TraceKind::Note, "fault: client delayed"),
                event(5, 10_000_000, 1, TraceKind::Restart, "RESTART n1"),
            ],
            nodes: [(0, "supervisor".to_owned()), (1, "store".to_owned())].into(),
            cut: false,
        }
    }

    #[test]
    fn a_branchs_replay_names_its_branch_in_the_header() {
        let result = SeedResult {
            test: "t".to_owned(),
            seed: 3,
            status: Status::Pass,
            ..SeedResult::default()
        };
        let path: BranchPath = "2000000000:3".parse().unwrap();
        let text = render(
            &sample(),
            &result,
            Some(&path),
            &Filter::default(),
            false,
            20,
        )
        .unwrap();
        assert!(
            text.starts_with("seed 3 along branch 2000000000:3 of t: PASS"),
            "{text}"
        );
        let own = render(&sample(), &result, None, &Filter::default(), false, 20).unwrap();
        assert!(own.starts_with("seed 3 of t: PASS"), "{own}");
    }

    #[test]
    fn each_event_sits_in_its_nodes_column_with_its_marker() {
        let result = SeedResult {
            status: Status::Pass,
            ..SeedResult::default()
        };
        let text = render(&sample(), &result, None, &Filter::default(), false, 20).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "        time supervisor          store");
        assert_eq!(lines[3], "          0s |                   + created");
        assert_eq!(
            lines[4],
            "         5ms |                   * fault: kill store"
        );
        assert_eq!(lines[5], "             |                   X KILLED");
        assert_eq!(lines[6], "         9ms * fault: client de~");
        assert_eq!(lines[7], "        10ms |                   ^ RESTARTED");
        assert!(!text.contains("poll t1"));
    }

    #[test]
    fn filters_keep_only_the_asked_nodes_and_times() {
        let result = SeedResult {
            status: Status::Pass,
            ..SeedResult::default()
        };
        let filter = Filter {
            nodes: vec!["store".into()],
            from: Some(std::time::Duration::from_millis(5)),
            until: Some(std::time::Duration::from_millis(9)),
        };
        let text = render(&sample(), &result, None, &filter, false, 20).unwrap();
        assert!(text.contains("X KILLED"));
        assert!(!text.contains("supervisor") && !text.contains("RESTARTED"));
        let unknown = Filter {
            nodes: vec!["ghost".into()],
            ..Filter::default()
        };
        let error = render(&sample(), &result, None, &unknown, false, 20)
            .unwrap_err()
            .to_string();
        assert!(error.contains("store (n1)"), "{error}");
        let backwards = Filter {
            from: Some(std::time::Duration::from_secs(2)),
            until: Some(std::time::Duration::from_secs(1)),
            ..Filter::default()
        };
        let error = render(&sample(), &result, None, &backwards, false, 20)
            .unwrap_err()
            .to_string();
        assert!(error.contains("--from 2s is after --until 1s"), "{error}");
    }
}
