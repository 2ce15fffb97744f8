//! The `#[crashtest::test]` attribute: an `async fn` becomes a `cargo test` test that runs the
//! body under many seeds, or under every crash case of one seed (`exhaustive`).
//!
//! The macro only rewrites syntax; everything it generates calls the `crashtest` runner, so
//! the behaviour (seeds, threads, reports) lives in ordinary, tested library code. It captures
//! the package, crate and module path at the call site so that a failure can print the exact
//! command that reproduces it.

use proc_macro::TokenStream;
use quote::quote;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ItemFn, Meta, Token, parse_macro_input};

/// Turns an `async fn` with no arguments into a test that runs it as the body of a
/// simulation, once per seed.
///
/// Arguments, all optional:
/// - `seeds = N`: how many seeds to run (default 16; `CRASHTEST_SEEDS` overrides);
/// - `seed = N`: run exactly this seed (`CRASHTEST_SEED` overrides);
/// - `config = path`: a `fn() -> crashtest::Config` giving the run's configuration;
/// - `env = ["NAME", ...]`: the environment variables that select the test's behaviour (a
///   planted bug, a workload); their values are printed in every reproduce line, so that a
///   line pasted into a fresh shell runs what failed, and the `crashtest` tool records them
///   in a sweep's results file and refuses to resume it under other values;
/// - `exhaustive`, or `exhaustive = path` to a `fn() -> crashtest::fs::exhaustive::Explorer`
///   giving its settings: instead of sampling seeds, run every crash point and crash outcome
///   of the body's crash scopes under one seed (`seed = N`, else the explorer's), and on a
///   failing case print the line that runs that case alone (`CRASHTEST_CASE`); see
///   `crashtest::runner::run_exhaustive`. Not with `seeds`; `config` only with the bare
///   `exhaustive` (an explorer function sets its own).
///
/// A seed that fails is saved to the test's regression file and run first from then on
/// (see `crashtest::runner::regressions`), except in a `#[should_panic]` test.
///
/// ```ignore
/// #[crashtest::test(seeds = 100, env = ["MY_DB_BUG"])]
/// async fn replicas_agree() {
///     // build nodes, inject faults, check invariants
/// }
/// ```
#[proc_macro_attribute]
pub fn test(args: TokenStream, item: TokenStream) -> TokenStream {
    let input = parse_macro_input!(item as ItemFn);
    let args = match Punctuated::<Meta, Token![,]>::parse_terminated.parse(args) {
        Ok(args) => args,
        Err(e) => return e.to_compile_error().into(),
    };
    match expand(args, input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(
    args: Punctuated<Meta, Token![,]>,
    input: ItemFn,
) -> syn::Result<proc_macro2::TokenStream> {
    if input.sig.asyncness.is_none() || !input.sig.inputs.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.sig,
            "#[crashtest::test] goes on an `async fn` with no arguments",
        ));
    }
    let mut seeds = quote!(::core::option::Option::None);
    let mut seed = quote!(::core::option::Option::None);
    let mut config = quote!(::crashtest::Config::default);
    let mut env = quote!(&[]);
    // `Some(None)`: the bare `exhaustive`; `Some(Some(path))`: `exhaustive = path`.
    let mut exhaustive: Option<Option<Expr>> = None;
    let mut config_given = false;
    let mut seeds_given = None;
    for arg in args {
        if let Meta::Path(path) = &arg
            && path.is_ident("exhaustive")
        {
            exhaustive = Some(None);
            continue;
        }
        let Meta::NameValue(pair) = &arg else {
            return Err(syn::Error::new_spanned(
                arg,
                "expected `seeds = N`, `seed = N`, `config = path`, `env = [\"NAME\", ...]` \
                 or `exhaustive`",
            ));
        };
        let value: &Expr = &pair.value;
        if pair.path.is_ident("seeds") {
            seeds_given = Some(pair.path.clone());
            seeds = quote!(::core::option::Option::Some(#value));
        } else if pair.path.is_ident("seed") {
            seed = quote!(::core::option::Option::Some(#value));
        } else if pair.path.is_ident("config") {
            config_given = true;
            config = quote!(#value);
        } else if pair.path.is_ident("exhaustive") {
            exhaustive = Some(Some(value.clone()));
        } else if pair.path.is_ident("env") {
            let Expr::Array(names) = value else {
                return Err(syn::Error::new_spanned(
                    value,
                    "`env` takes a list of variable names: `env = [\"MY_DB_BUG\"]`",
                ));
            };
            env = quote!(&#names);
        } else {
            return Err(syn::Error::new_spanned(
                &pair.path,
                "unknown argument: expected `seeds`, `seed`, `config`, `env` or `exhaustive`",
            ));
        }
    }
    if let (Some(Some(path)), true) = (&exhaustive, config_given) {
        return Err(syn::Error::new_spanned(
            path,
            "`config` with `exhaustive = path` would replace the configuration the explorer \
             sets: give it there instead (`Explorer::sim_config`)",
        ));
    }
    if let (Some(_), Some(seeds)) = (&exhaustive, &seeds_given) {
        return Err(syn::Error::new_spanned(
            seeds,
            "an exhaustive test runs every crash case of one seed: drop `seeds` (`seed = N` \
             picks the seed)",
        ));
    }
    let attrs = &input.attrs;
    let vis = &input.vis;
    let name = &input.sig.ident;
    let output = &input.sig.output;
    let block = &input.block;
    // The body becomes a nested fn whose name no user item can take (a leading
    // double underscore and the crate's name): a user fn or const named `body` in scope of the
    // test would otherwise be shadowed by it.
    let inner = quote::format_ident!("__crashtest_{}_body", name);
    // A test that is meant to fail keeps no regression file: its failing seed is the point.
    let expects_panic = attrs.iter().any(|a| a.path().is_ident("should_panic"));
    let runner = if expects_panic {
        quote!(run_test_expecting_panic)
    } else {
        quote!(run_test)
    };
    // An exhaustive test keeps no regression file either way: its first failing case is the
    // same on every run.
    let (runner, explorer) = match exhaustive {
        None => (runner, quote!()),
        Some(None) if config_given => (
            quote!(run_exhaustive),
            quote!(|| ::crashtest::fs::exhaustive::Explorer::new().sim_config((#config)()),),
        ),
        Some(None) => (
            quote!(run_exhaustive),
            quote!(::crashtest::fs::exhaustive::Explorer::new,),
        ),
        Some(Some(path)) => (quote!(run_exhaustive), quote!(#path,)),
    };
    Ok(quote! {
        #[::core::prelude::v1::test]
        #(#attrs)*
        #vis fn #name() {
            async fn #inner() #output #block
            ::crashtest::runner::#runner(
                ::crashtest::runner::TestSpec {
                    name: ::core::stringify!(#name),
                    module_path: ::core::module_path!(),
                    package: ::core::env!("CARGO_PKG_NAME"),
                    crate_name: ::core::env!("CARGO_CRATE_NAME"),
                    seeds: #seeds,
                    seed: #seed,
                    config: #config,
                    env: #env,
                },
                #explorer
                #inner,
            );
        }
    })
}
