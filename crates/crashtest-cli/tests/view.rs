//! `crashtest view`: a self-contained HTML space-time diagram, checked in headless Chromium.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{crashtest, exe, stdout, tempdir};

fn view(test: &str, seed: &str, out: &Path) -> String {
    let run = crashtest(&[
        "view",
        test,
        seed,
        "--exe",
        &exe(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", common::stderr(&run));
    assert!(stdout(&run).contains("diagram written to"));
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn the_diagram_draws_lanes_messages_and_faults_without_fetching_anything() {
    let dir = tempdir("view-html");
    let html = view("nodes_exchange_datagrams", "2", &dir.join("messages.html"));
    for lane in ["supervisor", "alpha", "beta", "gamma"] {
        assert!(html.contains(&format!(">{lane}</text>")), "lane {lane}");
    }
    let delivered = html.matches(r#"<line class="arrow""#).count();
    let dropped = html.matches(r#"<line class="lost""#).count();
    assert!(delivered >= 20, "{delivered} datagrams delivered");
    assert!(
        dropped >= 2,
        "datagrams dropped by the partition and the dead node: {dropped}"
    );
    assert!(html.contains(&format!("{} messages", delivered + dropped)));
    for mark in ["partition", "heal", "fault", "kill", "restart", "drop"] {
        assert!(
            html.contains(&format!(r#"class="{mark}""#)),
            "a {mark} mark"
        );
    }
    let without_namespace = html.replace("http://www.w3.org/2000/svg", "");
    for fetch in ["http://", "https://", " src=", "<link", "@import"] {
        assert!(
            !without_namespace.contains(fetch),
            "the page fetches {fetch}"
        );
    }
    let failing = view(
        "store::acknowledged_writes_survive_kills",
        "1",
        &dir.join("store.html"),
    );
    assert!(failing.contains("FAIL: panicked at src/store.rs"));
    assert!(failing.contains(r#"class="panic""#));
}

/// Chromium's binary, if installed.
fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|dir| dir.join(name))
                .find(|path| path.is_file())
        })
}

#[test]
fn headless_chromium_renders_the_diagram() {
    let Some(chromium) = chromium() else {
        eprintln!(
            "SKIPPED: chromium is not installed (apt-get install -y chromium); the diagram was not rendered"
        );
        return;
    };
    let dir = tempdir("view-chromium");
    let page = dir.join("messages.html");
    view("nodes_exchange_datagrams", "2", &page);
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("crashtest-view.png");
    let _ = std::fs::remove_file(&screenshot);
    let profile = dir.join("profile");
    let run = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1200,900",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&screenshot).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (1200, 900));
    let channels = info.color_type.samples();
    let count = |want: fn(u8, u8, u8) -> bool| {
        pixels
            .chunks(channels)
            .filter(|p| want(p[0], p[1], p[2]))
            .count()
    };
    let blue = count(|r, g, b| b > 180 && r < 90 && g < 140);
    let red = count(|r, g, b| r > 180 && g < 80 && b < 80);
    let dark = count(|r, g, b| r < 80 && g < 80 && b < 100);
    assert!(blue > 500, "message arrows drawn ({blue} blue pixels)");
    assert!(red > 100, "faults and the kill drawn ({red} red pixels)");
    assert!(dark > 1000, "lanes and labels drawn ({dark} dark pixels)");
    eprintln!("screenshot: {}", screenshot.display());
}
