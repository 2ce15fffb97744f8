//! Determinism guards for code crashtest does not control.
//!
//! crashtest's own API (`crashtest::time`, `crashtest::rand`, `crashtest::spawn`) is
//! deterministic by construction, but libraries and old code call the OS directly: std's
//! `HashMap` seeds itself from the OS, `rand::thread_rng()` too, `std::time::Instant::now()`
//! reads the machine's clock, a thread pool starts threads, and an HTTP client opens real
//! sockets and asks the real DNS. This crate puts guards in
//! front of those calls: functions of the executable that take the place of libc's. On a
//! thread running a simulation they answer from the simulation; on every other thread they
//! pass through to libc unchanged (at the cost of a thread-local read and an indirect call).
//!
//! # What is guarded (Linux with glibc; x86-64, and AArch64 untested)
//!
//! | Call | Inside a simulation |
//! |---|---|
//! | `getrandom`, `getentropy`, `syscall(SYS_getrandom, ..)` | bytes from the run's `"os-random"` stream; std's `HashMap` keys (`getrandom` with `GRND_INSECURE`) from `"hash-keys"`, so that making a map never shifts `rand`'s seed |
//! | `clock_gettime`: `CLOCK_MONOTONIC`, `_RAW`, `_COARSE`, `CLOCK_BOOTTIME` | virtual time, from a fixed base of 1,000,000 s |
//! | `clock_gettime`: `CLOCK_REALTIME`, `_COARSE`, `CLOCK_TAI`; `gettimeofday`; `time` | the calling node's wall clock, as `crashtest::time::system_time()` (TAI 37 s ahead) |
//! | `pthread_create` | fails the run with a message naming the fix and where the program started the thread; returns EAGAIN |
//! | `__register_atfork` (behind every `pthread_atfork`) | the handlers are kept from crashtest's own forks ([`unseen_fork`]), as are observers of forks registered outside |
//! | `nanosleep` (std's `thread::sleep`), `clock_nanosleep`, `usleep`, `sleep` | fails the run with a message naming the async sleep to use; returns at once, as if it had slept |
//! | `socket` | a placeholder descriptor (an empty sealed memfd, no socket), recorded with its family and type |
//! | `setsockopt`, `getsockopt`, `bind`, `listen`, `getsockname`, `getpeername` on a placeholder | recorded, or answered from the record (`getpeername`: ENOTCONN) |
//! | `close` | forgets a placeholder once its last descriptor closes (freeing its port), and closes |
//! | `connect`, `accept`, `accept4`, `send`, `sendto`, `sendmsg`, `sendmmsg`, `recv`, `recvfrom`, `recvmsg`, `recvmmsg` on a placeholder or a network socket, `listen` on a network socket | fails the run with a message naming the call and the fix; returns EPERM |
//! | `open`, `open64`, `openat`, `openat64`, `creat`, `mkdir`, `rmdir`, `unlink`, `rename`, `renameat2`, `link`, `truncate`, `chmod`, `utimensat` (and their `at` and `64` forms); `read`, `write`, `pread`, `pwrite`, `readv`, `writev`, `preadv`, `pwritev` (and `2`), `lseek`, `fsync`, `fdatasync`, `ftruncate`, `fallocate`, `posix_fallocate`, `fstat`, `fstatvfs`, `fstatfs`, `fchmod`, `futimens`, `flock`, `fcntl` (status flags, duplicates, open file description locks), `dup`, `dup2`, `dup3`, `close` on a simulated file; `stat`, `lstat`, `fstatat`, `statx`, `statvfs`, `statfs`, `access`, `faccessat`, `realpath`, `opendir`, `fdopendir`, `readdir`, `readdir_r`, `telldir`, `seekdir`, `rewinddir`, `dirfd`, `closedir` | the calling node's simulated disk, with its crash model: every change, and a read of an entry the disk has, of a path the program changed, or of a name in a directory the program made (the host's files otherwise); a simulated file's descriptor is a sealed empty memfd. The first change below a directory the host has (`/tmp`) gives the disk that directory, durably, and the host's files in it show through to reads |
//! | `mmap`, `mmap64` of a simulated file; `copy_file_range`, `sendfile`, `splice` with one; `fopen` to read a file of the disk | mmap and fopen fail the run (a mapping bypasses the disk, stdio reads the host); the copies return `EINVAL`, on which std copies through `read` and `write` |
//! | `symlink`, `chown`, `lchown`, `utime`, `utimes`, `lutimes`, `setxattr`, `lsetxattr`, `removexattr`, `lremovexattr`, `mknod`, `mkfifo` and their `at` forms; `fchmod`, `fchown`, `futimens`, `futimes`, `fsetxattr`, `fremovexattr` on a host file's descriptor; `fopen`, `freopen` (and `64`) to write, append or update; `mkstemp`, `mkostemp` (and `64`), `mkdtemp`, `tmpfile` (and `64`) | on an entry of the disk an owner is accepted and kept nowhere, a time is set, an extended attribute gets `EOPNOTSUPP`; otherwise not modelled: fails the run with a message naming the call, the path (or descriptor) and the fix ([`with_host_files`] for a change meant for the host); returns -1 (or a null pointer) with `EROFS`. Stateless devices (`/dev/null`, `/dev/zero`, `/dev/stdout`, ...) pass |
//! | `statx` of the tokio stand-in's simulated entry | the simulated entry's status, for std's `Metadata` |
//! | `getaddrinfo` | node names resolve to their simulated addresses, `localhost` and IP literals to themselves; any other name fails the run, EAI_NONAME |
//!
//! A tokio stand-in takes a placeholder over with [`adopt_placeholder`], which hands it the
//! family, type, options, bound address and whether it listens (see [`Placeholder`]): std's
//! `TcpListener::bind` succeeds on a placeholder, and tokio's `TcpListener::from_std` in the
//! stand-in makes it a simulated listener.
//! `freeaddrinfo` needs no guard: answers are laid out as glibc lays out its own.
//!
//! Tested in this crate's `tests/`, one source at a time:
//! - std's `HashMap` and `HashSet` iterate in an order the seed decides, in this process and
//!   in another (std looks `getrandom` up with `dlsym`, which finds the guard);
//! - `rand` 0.8's `thread_rng()` and `OsRng` are seeded from the seed (getrandom 0.2 calls
//!   `syscall(SYS_getrandom, ..)`), and so is getrandom 0.3 (it calls `getrandom`, as 0.4
//!   does);
//! - `std::time::Instant::now()` is virtual time and `SystemTime::now()` the node's wall clock;
//! - `std::thread::spawn`, scoped threads and any C library's threads fail the run with a
//!   message that says what to do instead; outside a simulation threads start as usual;
//! - `std::thread::sleep` and libc's `usleep`, `sleep` and `clock_nanosleep` fail the run and
//!   return at once; outside a simulation they sleep;
//! - std's `fs` (files, cursors, duplicates, `flock`, directories and listings, `rename`,
//!   `hard_link`, `copy`, `canonicalize`, `remove_dir_all`) and `tempfile`'s directories work
//!   on the node's disk and leave nothing on the host; a kill keeps what they synced and may
//!   undo what they did not; the same seed gives the same fingerprint; `mmap` of a simulated
//!   file and a `flock` that would wait fail the run;
//! - a symbolic link, a host file's owner, extended attributes, or mode and times changed
//!   through a descriptor opened for reading, `mkfifo`, stdio's `fopen` to write, and
//!   `mkstemp` and `mkdtemp` fail the run with `EROFS` and change nothing, the same way for a
//!   seed run twice; reading through `fopen` passes; reads of host files and `/dev/null`
//!   pass, a change inside [`with_host_files`] goes through, and outside a simulation every
//!   change works;
//! - std's `TcpStream::connect`, `TcpListener::accept` and `UdpSocket::send_to`, real
//!   tokio's `TcpStream::connect`, and `listen` on a real socket, fail the run and reach
//!   nothing (a loopback listener sees no connection, a loopback receiver no datagram), as
//!   does a socket made before the run; std's `TcpListener::bind` records a placeholder that
//!   takes no real port, only its port on the simulated network (a free one for port 0,
//!   which `local_addr` then names), as Linux takes one at `bind`;
//! - `"node:port".to_socket_addrs()` resolves to the node's address, an unknown name fails
//!   the run; socket2's calls as hyper-util's `HttpConnector` makes them succeed on a
//!   placeholder, and adoption returns the options they set; outside a simulation real
//!   sockets and loopback resolution work.
//!
//! CPU-time clocks (`CLOCK_PROCESS_CPUTIME_ID`, `CLOCK_THREAD_CPUTIME_ID`) pass through: they
//! measure real work, which no seed decides.
//!
//! # Per-thread seeds: run each simulation on a fresh thread
//!
//! std draws a thread's `HashMap` keys once, at the thread's first `RandomState`, and counts
//! up from them for every later one; `rand::thread_rng()` seeds itself once per thread too.
//! The guards decide those seeds only if they are drawn inside the simulation, so a run must
//! start on a thread that has not drawn them yet. [`on_fresh_thread`] runs a closure on a new
//! thread. Two runs on one thread see different `HashMap` orders even with the guards.
//!
//! # What still leaks
//!
//! - Code that reaches the kernel without libc: inline system calls (the `linux_raw` backend
//!   of rustix 0.37 and older, which this crate cannot switch to `use-libc` as it does for
//!   rustix 1 and 0.38; getrandom's `linux_raw` backend; assembly) and vDSO clock reads made
//!   directly (rustix's `clock_gettime`).
//! - Time stamp counters (`rdtsc`, `cntvct_el0`; the `quanta` and `minstant` crates).
//! - Randomness read from `/dev/urandom` or `/dev/random` as files, glibc's `arc4random`
//!   family, `rdrand`; the clock through `timespec_get`.
//! - Threads made without `pthread_create` (`clone`), and child processes (`fork`,
//!   `std::process::Command`), which run for real.
//! - What the machine is: `available_parallelism`, `gethostname`, process ids, what the real
//!   file system holds (reads pass: a file that changes between runs changes the run), and
//!   addresses (ASLR), which matter to code that orders by pointer.
//! - Changes to host files through a descriptor opened before the run (`write`, `pwrite`,
//!   `ftruncate` on it), through C libraries that call glibc's internal names (`fopen`), and
//!   through the calls not guarded: owners, times and extended attributes by path (`chown`,
//!   `utimensat`, `setxattr`), special files (`mknod`, `mkfifo`), a Unix socket's file
//!   (`bind`).
//! - The network, where it is reached other than through the calls above: `read`, `write`,
//!   `readv`, `writev`, `sendfile` and `splice` on a real socket made before the simulation;
//!   the older resolver calls (`gethostbyname`, `getnameinfo`, `res_query`); `socketpair`
//!   (local, so allowed) and real `AF_UNIX` sockets, which pass. Placeholder descriptor
//!   numbers are the OS's: code that branches on them is not deterministic.
//! - State kept between runs in one process: statics, `OnceLock`s, lazily built globals; an
//!   `Instant` taken outside a simulation means nothing inside one. Generators that seed
//!   themselves from a process-wide counter are such state: `futures::select!` (unbiased)
//!   shuffles its branches with one (use `tokio::select!`, whose order the tokio stand-in
//!   draws from the seed, or `futures::select_biased!`), tokio-stream's `StreamMap` picks
//!   the stream it polls first with one, and so does tokio's own generator for what the
//!   stand-in does not shadow.
//! - Seeds drawn on the thread before the simulation began (see above).
//! - Statically linked programs (musl, `-static`), where libc's symbols cannot be hidden.
//!
//! # When a guard cannot answer
//!
//! A guard must not panic: a panic in an `extern "C"` function aborts the process. Two cases
//! are handled. A guard called after the thread's simulation state was destroyed (by another
//! thread-local's destructor at thread exit) passes through to libc. A guard called inside a
//! closure that the simulator runs with its state in use (`SystemTime::now()` inside
//! `crashtest::rand::rng().with(..)`) fails the run with a message saying so and returns the C
//! error, which std turns into a panic.
//!
//! # Other platforms
//!
//! Elsewhere, and in builds without the `interpose` feature (on by default), this crate has
//! only [`install`] (which does nothing), [`on_fresh_thread`], [`adopt_placeholder`] (which
//! hands every descriptor back) and [`SUPPORTED`] (false): simulations run, but the calls
//! above are not guarded. A production build leaves the feature out to pay nothing for the
//! guards; the `crashtest` facade's `guards` feature controls it.
//!
//! # Linking
//!
//! A guard hides libc's function because the executable is first in the dynamic linker's
//! lookup order, and because the static linker (lld and GNU ld alike, with no flags) exports a
//! symbol that a linked shared library also defines, so `dlsym` lookups find it too. The
//! guards are functions nobody calls by name, and the linker keeps only what something refers
//! to: call [`install`] (or [`on_fresh_thread`], which calls it) from code linked into the
//! test binary.
//!
//! ```
//! use crashtest_core::Sim;
//! use std::collections::BTreeSet;
//!
//! /// The order in which a std `HashMap` built inside a run of `seed` iterates.
//! fn hashmap_order(seed: u64) -> Vec<u32> {
//!     crashtest_guard::on_fresh_thread(move || {
//!         let order = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
//!         let seen = order.clone();
//!         Sim::new(seed)
//!             .run(async move {
//!                 #[allow(clippy::disallowed_types, reason = "the guards seed its order")]
//!                 let map: std::collections::HashMap<u32, ()> = (0..32).map(|k| (k, ())).collect();
//!                 seen.borrow_mut().extend(map.keys().copied());
//!             })
//!             .unwrap();
//!         order.take()
//!     })
//! }
//!
//! if crashtest_guard::SUPPORTED {
//!     assert_eq!(hashmap_order(1), hashmap_order(1));
//!     let orders: BTreeSet<Vec<u32>> = (0..8).map(hashmap_order).collect();
//!     assert!(orders.len() > 1);
//! }
//! ```

mod allocator;
#[cfg(guards)]
mod glibc;
mod placeholder;

/// The scope inside which the guards let the calling thread change the host's files.
pub use crashtest_hooks::with_host_files;
#[cfg(unix)]
pub use placeholder::adopt_placeholder;
pub use placeholder::{Placeholder, SocketOptions};

/// True where the guards exist: Linux with glibc on x86-64 or AArch64, built with the
/// `interpose` feature (on by default).
///
/// ```
/// let linux_glibc = cfg!(all(target_os = "linux", target_env = "gnu"));
/// let arch = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));
/// assert!(!crashtest_guard::SUPPORTED || linux_glibc && arch);
/// ```
pub const SUPPORTED: bool = cfg!(guards);

/// Links the guards into the calling program. Cheap; call it as often as convenient.
///
/// ```
/// crashtest_guard::install();
/// ```
pub fn install() {
    #[cfg(guards)]
    glibc::link();
}

/// Runs `fork`, a call that forks the process, as one of crashtest's own forks (a guided
/// search's branch): the fork handlers the simulated program registered (`pthread_atfork`
/// inside a simulation), and those that only observe forks (one function for all three,
/// as rand 0.8's, which reseeds its `thread_rng` after a fork it counted), do not run, in the
/// parent or the child, so that the program sees no fork, as in a replay of the branch,
/// which never forks. Other handlers registered outside a simulation run as glibc runs
/// them. Without the guards, just calls `fork`.
///
/// ```
/// let value = crashtest_guard::unseen_fork(|| 7);
/// assert_eq!(value, 7);
/// ```
pub fn unseen_fork<R>(fork: impl FnOnce() -> R) -> R {
    #[cfg(guards)]
    return glibc::fork::unseen(fork);
    #[cfg(not(guards))]
    fork()
}

/// Runs `f` on a new OS thread and returns what it returns (a panic in `f` is resumed here).
///
/// A simulation started inside `f` draws the thread's `HashMap` keys and `thread_rng` seed
/// from its own seed, because nothing on the new thread has drawn them yet. Also links the
/// guards ([`install`]), and the first call sets glibc's malloc thresholds for a thread per
/// seed (unless the process set its own): a thread's arena is kept whole for the next
/// thread, instead of handed back to the kernel and faulted in again.
///
/// # Panics
///
/// Panics if called inside a simulation (that would start a thread in it), or if the OS
/// cannot start a thread.
///
/// ```
/// let seed = crashtest_guard::on_fresh_thread(|| {
///     crashtest_core::Sim::new(5).run(async {}).unwrap().seed
/// });
/// assert_eq!(seed, 5);
/// ```
pub fn on_fresh_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    assert!(
        !crashtest_core::plumbing::is_simulation(),
        "on_fresh_thread starts an OS thread, which a simulation does not allow; call it \
         outside the simulation"
    );
    install();
    allocator::tune_for_fresh_threads();
    std::thread::scope(|scope| match scope.spawn(f).join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}
