//! A sweep's or a hunt's progress: a bar on a terminal, a heartbeat line every 30 seconds in
//! a log.
//!
//! The bar shows seeds (or runs) done, the rate and the time left from indicatif's estimator (an
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
    /// What is counted: `seeds`, `runs`.
    unit: &'static str,
    total: u64,
    done: u64,
    ran: u64,
    failed: u64,
    /// What the bar says beside the count.
    message: String,
}

impl Progress {
    /// Progress over `total` seeds of which `done` were finished before this run.
    pub(crate) fn new(total: u64, done: u64) -> Progress {
        Progress::counting("seeds", total, done)
    }

    /// Progress over `total` of `unit`, of which `done` were finished before this run.
    pub(crate) fn counting(unit: &'static str, total: u64, done: u64) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let target = if terminal {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(total), target);
        bar.set_style(
            ProgressStyle::with_template(&format!(
                "[{{elapsed_precise}}] {{wide_bar}} {{pos}}/{{len}} {unit}  {{per_sec:.1}}  \
                 {{eta}} left  {{msg}}"
            ))
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
            unit,
            total,
            done,
            ran: 0,
            failed: 0,
            message: "0 failed".to_owned(),
        }
    }

    /// Counts one finished seed.
    pub(crate) fn seed_done(&mut self, failed: bool) {
        self.failed += u64::from(failed);
        let message = format!("{} failed", self.failed);
        self.reached(self.done + 1, message);
    }

    /// Sets the count done so far (it only grows) and what the bar says beside it.
    pub(crate) fn reached(&mut self, done: u64, message: String) {
        assert!(
            done >= self.done,
            "progress went back from {} to {done}",
            self.done
        );
        self.ran += done - self.done;
        self.done = done;
        self.bar.set_position(done);
        self.bar.set_message(message.clone());
        self.message = message;
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
        let unit = self.unit;
        let mut line = format!(
            "crashtest: {}/{} {unit}, {}",
            self.done, self.total, self.message
        );
        if since_last == 0 {
            line.push_str(&format!(
                ", none finished in the last {}s (slow {unit}, or a worker that --seed-timeout \
                 will stop)",
                HEARTBEAT.as_secs()
            ));
        } else {
            line.push_str(&format!(
                ", {:.1} {unit}/s, about {} left",
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
            stalled.starts_with("crashtest: 11/100 seeds, 1 failed, none finished in the last 30s"),
            "{stalled}"
        );
        let moving = progress.heartbeat(1);
        assert!(moving.contains("seeds/s, about "), "{moving}");
        progress.finish();
    }

    #[test]
    fn a_hunts_heartbeat_counts_runs_and_says_what_it_reached() {
        let mut progress = Progress::counting("runs", 3000, 0);
        progress.reached(1200, "14 features, corpus 9".to_owned());
        let line = progress.heartbeat(1200);
        assert!(
            line.starts_with("crashtest: 1200/3000 runs, 14 features, corpus 9, "),
            "{line}"
        );
        assert!(line.contains(" runs/s, about "), "{line}");
        progress.finish();
    }
}
