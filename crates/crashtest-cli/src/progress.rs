//! The sweep's progress: a bar on a terminal, a line every ten seconds in a log.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::worker::now;

/// How often progress is printed when stderr is not a terminal.
const PLAIN_PERIOD: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub(crate) struct Progress {
    bar: ProgressBar,
    /// Set when stderr is not a terminal: then the bar is hidden and lines are printed.
    plain: Option<Instant>,
    started: Instant,
    total: u64,
    done: u64,
    ran: u64,
    failed: u64,
}

impl Progress {
    /// Progress over `total` seeds of which `done` were finished before this run.
    pub(crate) fn new(total: u64, done: u64) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let target = if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        bar.set_style(
            ProgressStyle::with_template("[{elapsed_precise}] {wide_bar} {pos}/{len} seeds  {msg}")
                .expect("a valid progress template"),
        );
        bar.set_position(done);
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress {
            bar,
            plain: (!terminal).then(now),
            started: now(),
            total,
            done,
            ran: 0,
            failed: 0,
        }
    }

    /// Counts one finished seed.
    pub(crate) fn seed_done(&mut self, failed: bool) {
        self.done += 1;
        self.ran += 1;
        self.failed += u64::from(failed);
        self.bar.set_message(format!(
            "{:.1} seeds/s  {} failed",
            self.rate(),
            self.failed
        ));
        self.bar.inc(1);
        if self
            .plain
            .is_some_and(|last| last.elapsed() >= PLAIN_PERIOD)
        {
            self.plain = Some(now());
            eprintln!(
                "crashtest: {}/{} seeds, {} failed, {:.1} seeds/s",
                self.done,
                self.total,
                self.failed,
                self.rate()
            );
        }
    }

    /// Seeds finished per second of this run.
    pub(crate) fn rate(&self) -> f64 {
        self.ran as f64 / self.started.elapsed().as_secs_f64().max(1e-9)
    }

    /// Prints a line above the bar.
    pub(crate) fn println(&self, line: &str) {
        if self.plain.is_some() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
