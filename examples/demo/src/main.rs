//! Runs the demo cluster under one seed and prints what the simulation did.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// Run a small simulated cluster (heartbeating nodes, one killed and restarted) and print the
/// seed, the virtual time reached, the events run and the run's fingerprint.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The seed that draws the whole run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Nodes in the cluster (at least 2).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(2..=1000))]
    nodes: u64,
    /// Virtual seconds the cluster runs.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    seconds: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let plan = crashtest_demo::Plan {
        nodes: usize::try_from(args.nodes).expect("bounded by the parser"),
        duration: Duration::from_secs(args.seconds),
    };
    match crashtest::Sim::new(args.seed).run(crashtest_demo::cluster(plan)) {
        Ok(summary) => {
            println!("seed:         {}", summary.seed);
            println!("virtual time: {:?}", summary.elapsed);
            println!("events:       {}", summary.events);
            println!("polls:        {}", summary.polls);
            println!("fingerprint:  {:016x}", summary.fingerprint);
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("{failure}");
            eprintln!(
                "reproduce: cargo run --release -p crashtest-demo -- --seed {}",
                args.seed
            );
            ExitCode::FAILURE
        }
    }
}
