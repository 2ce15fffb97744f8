//! `install` links the guards in, where the dynamic linker's lookups find them: std and the
//! getrandom crate look `getrandom` up with `dlsym`, which sees only what the executable
//! exports.

#![cfg(guards)]
/// Whether a `dlsym` lookup of `name` finds libc's definition rather than this executable's.
fn lookup_finds_libc(name: &std::ffi::CStr) -> bool {
    // SAFETY: dlopen with RTLD_NOLOAD only returns a handle to the already loaded libc; the
    // names are NUL-terminated.
    unsafe {
        let libc = libc::dlopen(c"libc.so.6".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        assert!(!libc.is_null());
        libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) == libc::dlsym(libc, name.as_ptr())
    }
}

#[test]
fn install_puts_every_guard_in_front_of_libc() {
    crashtest_guard::install();
    const { assert!(crashtest_guard::SUPPORTED) };
    for name in [
        c"getrandom",
        c"getentropy",
        c"syscall",
        c"clock_gettime",
        c"gettimeofday",
        c"time",
        c"pthread_create",
        c"__register_atfork",
        c"socket",
        c"close",
        c"connect",
        c"bind",
        c"listen",
        c"accept",
        c"accept4",
        c"send",
        c"sendto",
        c"sendmsg",
        c"sendmmsg",
        c"recv",
        c"recvfrom",
        c"recvmsg",
        c"recvmmsg",
        c"setsockopt",
        c"getsockopt",
        c"getsockname",
        c"getpeername",
        c"getaddrinfo",
        c"nanosleep",
        c"clock_nanosleep",
        c"usleep",
        c"sleep",
        c"open",
        c"open64",
        c"openat",
        c"openat64",
        c"creat",
        c"creat64",
        c"mkdir",
        c"mkdirat",
        c"rmdir",
        c"unlink",
        c"unlinkat",
        c"rename",
        c"renameat",
        c"renameat2",
        c"link",
        c"linkat",
        c"symlink",
        c"symlinkat",
        c"truncate",
        c"truncate64",
        c"chmod",
        c"fchmodat",
        c"read",
        c"write",
        c"pread64",
        c"pwrite64",
        c"readv",
        c"writev",
        c"preadv",
        c"preadv64",
        c"preadv2",
        c"pwritev",
        c"pwritev64",
        c"pwritev2",
        c"telldir",
        c"seekdir",
        c"readdir_r",
        c"readdir64_r",
        c"chown",
        c"utimes",
        c"setxattr",
        c"fchown",
        c"statvfs",
        c"fstatfs",
        c"lseek64",
        c"fsync",
        c"fdatasync",
        c"ftruncate64",
        c"fallocate64",
        c"fstat",
        c"fstat64",
        c"stat64",
        c"lstat64",
        c"fstatat64",
        c"statx",
        c"access",
        c"realpath",
        c"fcntl",
        c"dup",
        c"dup2",
        c"dup3",
        c"flock",
        c"mmap",
        c"mmap64",
        c"copy_file_range",
        c"sendfile64",
        c"opendir",
        c"fdopendir",
        c"readdir64",
        c"dirfd",
        c"closedir",
    ] {
        assert!(!lookup_finds_libc(name), "{name:?} resolves to libc");
    }
}

#[test]
fn functions_that_are_not_guarded_still_resolve_to_libc() {
    crashtest_guard::install();
    for name in [
        c"getpid",
        c"freeaddrinfo",
        c"shutdown",
        c"socketpair",
        c"pipe2",
        c"syncfs",
    ] {
        assert!(lookup_finds_libc(name), "{name:?}");
    }
}
