//! A simulation started without the `crashtest` facade has no network or disk registered:
//! a tokio network or file call there fails the run saying what registers them. (Its own
//! test binary: registration is per process, and nothing here registers.)

use crashtest_tokio as tokio;

#[test]
fn without_the_facade_a_network_call_says_what_registers_the_network() {
    assert!(crashtest_hooks::network().is_none());
    let failure = crashtest_core::Sim::new(1)
        .run(async {
            let _ = tokio::net::UdpSocket::bind("0.0.0.0:0").await;
        })
        .unwrap_err();
    let text = failure.to_string();
    assert!(text.contains("tokio::net::UdpSocket::bind cannot run inside"));
    assert!(text.contains("registered by the `crashtest` crate"));
}
