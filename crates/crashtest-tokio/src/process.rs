//! `tokio::process`: tokio's, with spawning refused inside a simulation.
//!
//! A child process would run for real, outside the simulated world and its clock, so
//! `Command::spawn`, `status` and `output` fail the run there with a message. Building a
//! command is allowed (it does nothing).

use std::ffi::OsStr;
use std::fmt;
use std::future::Future;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Output, Stdio};

pub use real::process::*;

use crate::seam;

/// A process to start, like `tokio::process::Command`.
///
/// ```
/// use crashtest_tokio as tokio;
/// let failure = crashtest::Sim::new(1).run(async {
///     let _ = tokio::process::Command::new("ls").arg("-l").spawn();
/// }).unwrap_err();
/// assert!(failure.to_string().contains("tokio::process::Command::spawn cannot run inside"));
/// ```
pub struct Command {
    real: real::process::Command,
}

#[track_caller]
fn refuse_inside(call: &str) {
    if seam::sim().is_some() {
        seam::refuse(
            call,
            "a child process runs outside the simulated world; simulate the other program as \
             a node (crashtest::node::create)",
        );
    }
}

impl Command {
    /// A command to run `program`.
    pub fn new<S: AsRef<OsStr>>(program: S) -> Command {
        Command {
            real: real::process::Command::new(program),
        }
    }

    /// std's command underneath.
    pub fn as_std(&self) -> &std::process::Command {
        self.real.as_std()
    }

    /// std's command underneath, mutably.
    pub fn as_std_mut(&mut self) -> &mut std::process::Command {
        self.real.as_std_mut()
    }

    /// Adds an argument.
    pub fn arg<S: AsRef<OsStr>>(&mut self, arg: S) -> &mut Command {
        self.real.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.real.args(args);
        self
    }

    /// Sets an environment variable.
    pub fn env<K, V>(&mut self, key: K, val: V) -> &mut Command
    where
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.real.env(key, val);
        self
    }

    /// Sets environment variables.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Command
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.real.envs(vars);
        self
    }

    /// Removes an environment variable.
    pub fn env_remove<K: AsRef<OsStr>>(&mut self, key: K) -> &mut Command {
        self.real.env_remove(key);
        self
    }

    /// Clears the environment.
    pub fn env_clear(&mut self) -> &mut Command {
        self.real.env_clear();
        self
    }

    /// Sets the working directory.
    pub fn current_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Command {
        self.real.current_dir(dir);
        self
    }

    /// Sets the child's standard input.
    pub fn stdin<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.real.stdin(cfg);
        self
    }

    /// Sets the child's standard output.
    pub fn stdout<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.real.stdout(cfg);
        self
    }

    /// Sets the child's standard error.
    pub fn stderr<T: Into<Stdio>>(&mut self, cfg: T) -> &mut Command {
        self.real.stderr(cfg);
        self
    }

    /// Kills the child when its handle drops.
    pub fn kill_on_drop(&mut self, kill_on_drop: bool) -> &mut Command {
        self.real.kill_on_drop(kill_on_drop);
        self
    }

    /// Whether the child is killed when its handle drops.
    pub fn get_kill_on_drop(&self) -> bool {
        self.real.get_kill_on_drop()
    }

    /// Sets the child's user id.
    #[cfg(unix)]
    pub fn uid(&mut self, id: u32) -> &mut Command {
        self.real.uid(id);
        self
    }

    /// Sets the child's group id.
    #[cfg(unix)]
    pub fn gid(&mut self, id: u32) -> &mut Command {
        self.real.gid(id);
        self
    }

    /// Sets the child's process group.
    #[cfg(unix)]
    pub fn process_group(&mut self, pgroup: i32) -> &mut Command {
        self.real.process_group(pgroup);
        self
    }

    /// Sets the child's `argv[0]`.
    #[cfg(unix)]
    pub fn arg0<S: AsRef<OsStr>>(&mut self, arg: S) -> &mut Command {
        self.real.arg0(arg);
        self
    }

    /// Runs `f` in the child just before it executes the program.
    ///
    /// # Safety
    ///
    /// As tokio's (and std's `CommandExt::pre_exec`): `f` runs in the forked child, where
    /// only async-signal-safe work is sound.
    #[cfg(unix)]
    pub unsafe fn pre_exec<F>(&mut self, f: F) -> &mut Command
    where
        F: FnMut() -> io::Result<()> + Send + Sync + 'static,
    {
        // SAFETY: the caller keeps `pre_exec`'s contract, which is tokio's own.
        unsafe { self.real.pre_exec(f) };
        self
    }

    /// std's command, with what was set on this one.
    pub fn into_std(self) -> std::process::Command {
        self.real.into_std()
    }

    /// Starts the child. Refused inside a simulation.
    ///
    /// # Errors
    ///
    /// tokio's.
    #[track_caller]
    pub fn spawn(&mut self) -> io::Result<Child> {
        refuse_inside("tokio::process::Command::spawn");
        self.real.spawn()
    }

    /// Runs the child to its end; its status. Refused inside a simulation.
    #[track_caller]
    pub fn status(&mut self) -> impl Future<Output = io::Result<ExitStatus>> + use<> {
        refuse_inside("tokio::process::Command::status");
        self.real.status()
    }

    /// Runs the child to its end; its output. Refused inside a simulation.
    #[track_caller]
    pub fn output(&mut self) -> impl Future<Output = io::Result<Output>> + use<> {
        refuse_inside("tokio::process::Command::output");
        self.real.output()
    }
}

impl From<std::process::Command> for Command {
    fn from(std: std::process::Command) -> Command {
        Command { real: std.into() }
    }
}

impl fmt::Debug for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.real.fmt(f)
    }
}
