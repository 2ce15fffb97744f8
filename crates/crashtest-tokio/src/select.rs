//! `select!`: tokio's syntax and rules, with the unbiased branch order drawn from the
//! simulation's seed inside one.
//!
//! tokio's unbiased `select!` starts polling at a branch drawn from a generator the
//! simulation does not own, so which of two ready branches wins would differ from run to
//! run. This `select!` draws the starting branch from the run's seeded `"tokio"` stream
//! inside a simulation (the same seed picks the same branches; different seeds explore
//! different ones), and from tokio's generator outside. A `biased;` select is passed to
//! tokio's macro unchanged: its order is the program's.
//!
//! The rules are tokio's: preconditions are evaluated first, then every branch's future (the
//! disabled ones too), in source order; the branches are polled in turn from the start; a
//! completed branch whose value does not match its pattern is disabled and the others go
//! on; the futures are dropped before the winning handler runs; with every branch disabled,
//! the `else` branch runs, or the macro panics without one.
//!
//! How it is built: `select!` reads the branches one at a time (a pattern is every token up
//! to the first `=` outside a group), giving each an index and an output variant, then
//! expands to one poll loop. To test a value against its pattern without moving it, the
//! loop matches a reference with a copy of the pattern stripped of `mut` and `ref` (binding
//! modes that a match on a reference rejects); the handler's match uses the pattern as
//! written.

use crate::seam;

/// Whether a simulation runs on this thread (the select's loop skips tokio's budget then).
#[doc(hidden)]
#[inline]
pub fn simulated() -> bool {
    seam::sim().is_some()
}

/// The branch an unbiased `select!` of `branches` branches polls first.
#[doc(hidden)]
pub fn select_start(branches: u32) -> u32 {
    match seam::sim() {
        Some(sim) => {
            let drawn = sim.draw_below(u64::from(branches));
            u32::try_from(drawn).expect("a draw below a u32 fits a u32")
        }
        None => real::macros::support::thread_rng_n(branches),
    }
}

/// Waits on several branches and runs the handler of the first to complete, like
/// `tokio::select!`; deterministic inside a simulation (see the module's documentation).
///
/// ```
/// use crashtest_tokio as tokio;
/// use std::time::Duration;
/// crashtest::Sim::new(1).run(async {
///     let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
///     tokio::spawn(async move {
///         tokio::time::sleep(Duration::from_millis(5)).await;
///         tx.send(7).await.unwrap();
///     });
///     let got = tokio::select! {
///         Some(v) = rx.recv() => v,
///         _ = tokio::time::sleep(Duration::from_secs(1)) => 0,
///     };
///     assert_eq!(got, 7);
/// }).unwrap();
/// ```
#[macro_export]
macro_rules! select {
    (biased; $($branches:tt)*) => {
        $crate::__private::real::select! { biased; $($branches)* }
    };
    ($($branches:tt)*) => {
        $crate::__select_branches! {
            branches: []
            free: [
                (0 B0) (1 B1) (2 B2) (3 B3) (4 B4) (5 B5) (6 B6) (7 B7)
                (8 B8) (9 B9) (10 B10) (11 B11) (12 B12) (13 B13) (14 B14) (15 B15)
                (16 B16) (17 B17) (18 B18) (19 B19) (20 B20) (21 B21) (22 B22) (23 B23)
                (24 B24) (25 B25) (26 B26) (27 B27) (28 B28) (29 B29) (30 B30) (31 B31)
                (32 B32) (33 B33) (34 B34) (35 B35) (36 B36) (37 B37) (38 B38) (39 B39)
                (40 B40) (41 B41) (42 B42) (43 B43) (44 B44) (45 B45) (46 B46) (47 B47)
                (48 B48) (49 B49) (50 B50) (51 B51) (52 B52) (53 B53) (54 B54) (55 B55)
                (56 B56) (57 B57) (58 B58) (59 B59) (60 B60) (61 B61) (62 B62) (63 B63)
            ]
            pattern: []
            input: $($branches)*
        }
    };
}

/// Reads `select!`'s branches: the pattern token by token up to `=`, then the future, the
/// optional precondition and the handler. Each branch becomes
/// `{ index Variant [pattern] (future) (precondition) (handler) }`.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_branches {
    // No more input: no `else`.
    (branches: [$($b:tt)*] free: $free:tt pattern: [] input:) => {
        $crate::__select_strip! {
            done: [$($b)*]
            todo: [$($b)*]
            otherwise: (::core::panic!("all branches are disabled and there is no else branch"))
        }
    };
    (branches: [$($b:tt)*] free: $free:tt pattern: [] input: else => $otherwise:expr $(,)?) => {
        $crate::__select_strip! {
            done: [$($b)*]
            todo: [$($b)*]
            otherwise: ($otherwise)
        }
    };
    // The end of a pattern.
    (branches: $b:tt free: $free:tt pattern: [$($p:tt)+] input: = $($rest:tt)*) => {
        $crate::__select_branches! { @future branches: $b free: $free pattern: [$($p)+] input: $($rest)* }
    };
    // One more token of a pattern.
    (branches: $b:tt free: $free:tt pattern: [$($p:tt)*] input: $t:tt $($rest:tt)*) => {
        $crate::__select_branches! { branches: $b free: $free pattern: [$($p)* $t] input: $($rest)* }
    };
    (@future branches: $b:tt free: $free:tt pattern: $p:tt input: $f:expr, if $c:expr => $($rest:tt)*) => {
        $crate::__select_branches! { @handler branches: $b free: $free pattern: $p future: ($f) condition: ($c) input: $($rest)* }
    };
    (@future branches: $b:tt free: $free:tt pattern: $p:tt input: $f:expr => $($rest:tt)*) => {
        $crate::__select_branches! { @handler branches: $b free: $free pattern: $p future: ($f) condition: (true) input: $($rest)* }
    };
    (@handler branches: $b:tt free: $free:tt pattern: $p:tt future: $f:tt condition: $c:tt input: $h:block, $($rest:tt)*) => {
        $crate::__select_branches! { @add branches: $b free: $free pattern: $p future: $f condition: $c handler: ($h) input: $($rest)* }
    };
    (@handler branches: $b:tt free: $free:tt pattern: $p:tt future: $f:tt condition: $c:tt input: $h:block $($rest:tt)*) => {
        $crate::__select_branches! { @add branches: $b free: $free pattern: $p future: $f condition: $c handler: ($h) input: $($rest)* }
    };
    (@handler branches: $b:tt free: $free:tt pattern: $p:tt future: $f:tt condition: $c:tt input: $h:expr, $($rest:tt)*) => {
        $crate::__select_branches! { @add branches: $b free: $free pattern: $p future: $f condition: $c handler: ($h) input: $($rest)* }
    };
    (@handler branches: $b:tt free: $free:tt pattern: $p:tt future: $f:tt condition: $c:tt input: $h:expr) => {
        $crate::__select_branches! { @add branches: $b free: $free pattern: $p future: $f condition: $c handler: ($h) input: }
    };
    (@add branches: [$($b:tt)*] free: [($i:tt $v:ident) $($free:tt)*] pattern: $p:tt future: $f:tt condition: $c:tt handler: $h:tt input: $($rest:tt)*) => {
        $crate::__select_branches! {
            branches: [$($b)* { $i $v $p $f $c $h }]
            free: [$($free)*]
            pattern: []
            input: $($rest)*
        }
    };
    (@add branches: $b:tt free: [] $($rest:tt)*) => {
        ::core::compile_error!("select! takes at most 64 branches")
    };
}

/// Strips `mut` and `ref` from each branch's pattern (through groups too), one branch at a
/// time, then expands the select.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_strip {
    (done: $done:tt todo: [] otherwise: $otherwise:tt $(stripped: [$($s:tt)*])?) => {
        $crate::__select_expand! { branches: $done stripped: [$($($s)*)?] otherwise: $otherwise }
    };
    (done: $done:tt todo: [{ $i:tt $v:ident [$($p:tt)*] $($ignored:tt)* } $($todo:tt)*] otherwise: $otherwise:tt $(stripped: [$($s:tt)*])?) => {
        $crate::__select_strip! {
            @pattern out: [] input: [$($p)*] stack: []
            then: { done: $done todo: [$($todo)*] otherwise: $otherwise stripped: [$($($s)*)?] }
        }
    };
    // Pattern stripping: a stack machine that descends into groups.
    (@pattern out: $out:tt input: [mut $($in:tt)*] stack: $stack:tt then: $then:tt) => {
        $crate::__select_strip! { @pattern out: $out input: [$($in)*] stack: $stack then: $then }
    };
    (@pattern out: $out:tt input: [ref $($in:tt)*] stack: $stack:tt then: $then:tt) => {
        $crate::__select_strip! { @pattern out: $out input: [$($in)*] stack: $stack then: $then }
    };
    (@pattern out: $out:tt input: [($($g:tt)*) $($in:tt)*] stack: [$($stack:tt)*] then: $then:tt) => {
        $crate::__select_strip! { @pattern out: [] input: [$($g)*] stack: [(paren $out [$($in)*]) $($stack)*] then: $then }
    };
    (@pattern out: $out:tt input: [[$($g:tt)*] $($in:tt)*] stack: [$($stack:tt)*] then: $then:tt) => {
        $crate::__select_strip! { @pattern out: [] input: [$($g)*] stack: [(bracket $out [$($in)*]) $($stack)*] then: $then }
    };
    (@pattern out: $out:tt input: [{$($g:tt)*} $($in:tt)*] stack: [$($stack:tt)*] then: $then:tt) => {
        $crate::__select_strip! { @pattern out: [] input: [$($g)*] stack: [(brace $out [$($in)*]) $($stack)*] then: $then }
    };
    (@pattern out: [$($out:tt)*] input: [$t:tt $($in:tt)*] stack: $stack:tt then: $then:tt) => {
        $crate::__select_strip! { @pattern out: [$($out)* $t] input: [$($in)*] stack: $stack then: $then }
    };
    // A group's contents are done: wrap them and go on with what followed the group.
    (@pattern out: [$($g:tt)*] input: [] stack: [(paren [$($out:tt)*] $in:tt) $($stack:tt)*] then: $then:tt) => {
        $crate::__select_strip! { @pattern out: [$($out)* ($($g)*)] input: $in stack: [$($stack)*] then: $then }
    };
    (@pattern out: [$($g:tt)*] input: [] stack: [(bracket [$($out:tt)*] $in:tt) $($stack:tt)*] then: $then:tt) => {
        $crate::__select_strip! { @pattern out: [$($out)* [$($g)*]] input: $in stack: [$($stack)*] then: $then }
    };
    (@pattern out: [$($g:tt)*] input: [] stack: [(brace [$($out:tt)*] $in:tt) $($stack:tt)*] then: $then:tt) => {
        $crate::__select_strip! { @pattern out: [$($out)* {$($g)*}] input: $in stack: [$($stack)*] then: $then }
    };
    // The whole pattern is done: on to the next branch.
    (@pattern out: $out:tt input: [] stack: [] then: { done: $done:tt todo: $todo:tt otherwise: $otherwise:tt stripped: [$($s:tt)*] }) => {
        $crate::__select_strip! { done: $done todo: $todo otherwise: $otherwise stripped: [$($s)* $out] }
    };
}

/// The select itself, once every branch is read and every pattern stripped.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_expand {
    (
        branches: [$({ $i:tt $v:ident [$($p:tt)*] ($f:expr) ($c:expr) ($h:expr) })+]
        stripped: [$([$($s:tt)*])+]
        otherwise: ($otherwise:expr)
    ) => {{
        #[allow(non_camel_case_types, clippy::enum_variant_names)]
        enum __SelectOut<$($v,)+> {
            $($v($v),)+
            Disabled,
        }
        const __BRANCHES: u32 = [$($i,)+].len() as u32;
        let mut __disabled: u64 = 0;
        $(
            if !$c {
                __disabled |= 1u64 << $i;
            }
        )+
        let __start = $crate::__private::select_start(__BRANCHES);
        let __out = {
            let mut __futures = ($(
                ::core::pin::pin!(::core::future::IntoFuture::into_future($f)),
            )+);
            ::core::future::poll_fn(|__cx| {
                if $crate::__private::simulated() {
                    // A simulation has no cooperative budget to respect.
                } else if $crate::__private::real::macros::support::poll_budget_available(__cx).is_pending() {
                    return ::core::task::Poll::Pending;
                }
                let mut __pending = false;
                for __turn in 0..__BRANCHES {
                    let __branch = (__start + __turn) % __BRANCHES;
                    $(
                        if __branch == $i && __disabled & (1u64 << $i) == 0 {
                            match ::core::future::Future::poll(__futures.$i.as_mut(), __cx) {
                                ::core::task::Poll::Ready(__value) => {
                                    __disabled |= 1u64 << $i;
                                    #[allow(unused_variables, unreachable_patterns)]
                                    let __matched = ::core::matches!(&__value, $($s)*);
                                    if __matched {
                                        return ::core::task::Poll::Ready(__SelectOut::$v(__value));
                                    }
                                }
                                ::core::task::Poll::Pending => __pending = true,
                            }
                        }
                    )+
                }
                if __pending {
                    ::core::task::Poll::Pending
                } else {
                    ::core::task::Poll::Ready(__SelectOut::Disabled)
                }
            })
            .await
        };
        #[allow(unreachable_patterns, unused_variables)]
        match __out {
            $(__SelectOut::$v($($p)*) => $h,)+
            __SelectOut::Disabled => $otherwise,
            _ => ::core::unreachable!("a select! branch completed without matching its pattern"),
        }
    }};
}
