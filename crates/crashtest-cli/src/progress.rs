//! The sweep's progress: a bar on a terminal, a heartbeat line every 30 seconds in a log.
//!
//! The bar shows seeds done, the rate and the time left from indicatif's estimator (an
//! exponentially weighted rate, so a slow start or a burst of fast seeds does not swing the
//! estimate). Without a terminal (a CI log) the bar is hidden and a line is printed on a
//! timer, not per seed, so that a long stall still shows the sweep is alive, and says so.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::worker::now;

/// How often a heartbeat line is printed when stderr is not a terminal.
const HEARTBEAT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub(crate) struct Progress {
    bar: ProgressBar,
    /// Set when stderr is not a terminal: when the last heartbeat was printed, and how many
    /// seeds had run then.
    plain: Option<(Instant, u64)>,
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
            ProgressStyle::with_template(
                "[{elapsed_precise}] {wide_bar} {pos}/{len} seeds  {per_sec:.1}  {eta} left  {msg}",
            )
            .expect("a valid progress template"),
        );
        bar.set_position(done);
        // The seeds done before this run are not this run's rate.
        bar.reset_eta();
        bar.set_message("0 failed");
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress {
            bar,
            plain: (!terminal).then(|| (now(), 0)),
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
        self.bar.set_message(format!("{} failed", self.failed));
        self.bar.inc(1);
    }

    /// Prints the heartbeat line when one is due (call it often: the sweep does, between
    /// results).
    pub(crate) fn tick(&mut self) {
        let Some((last, ran_then)) = self.plain else {
            return;
        };
        if last.elapsed() < HEARTBEAT {
            return;
        }
        self.plain = Some((now(), self.ran));
        eprintln!("{}", self.heartbeat(self.ran - ran_then));
    }

    /// `crashtest: 1200/10000 seeds, 3 failed, 41.2 seeds/s, about 3m35s left`.
    fn heartbeat(&self, since_last: u64) -> String {
        let mut line = format!(
            "crashtest: {}/{} seeds, {} failed",
            self.done, self.total, self.failed
        );
        if since_last == 0 {
            line.push_str(&format!(
                ", no seed finished in the last {}s (slow seeds, or a worker that --seed-timeout will stop)",
                HEARTBEAT.as_secs()
            ));
        } else {
            line.push_str(&format!(
                ", {:.1} seeds/s, about {} left",
                self.bar.per_sec(),
                indicatif::HumanDuration(self.bar.eta())
            ));
        }
        line
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heartbeat_says_when_no_seed_finished() {
        let mut progress = Progress::new(100, 10);
        progress.seed_done(true);
        let stalled = progress.heartbeat(0);
        assert!(
            stalled
                .starts_with("crashtest: 11/100 seeds, 1 failed, no seed finished in the last 30s"),
            "{stalled}"
        );
        let moving = progress.heartbeat(1);
        assert!(moving.contains("seeds/s, about "), "{moving}");
        progress.finish();
    }
}
