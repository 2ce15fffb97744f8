//! An ordinary tokio program: a counter service over TCP that persists its count to a file.
//! Nothing here names crashtest.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves `+1` requests on `addr`, persisting the count in `path`.
pub async fn serve(addr: &str, path: &'static str) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (mut stream, _) = listener.accept().await?;
        connections.spawn(async move {
            let mut byte = [0; 1];
            while stream.read_exact(&mut byte).await.is_ok() {
                let count = match tokio::fs::read_to_string(path).await {
                    Ok(text) => text.parse::<u64>().unwrap_or(0),
                    Err(_) => 0,
                } + 1;
                tokio::fs::write(path, count.to_string()).await.unwrap();
                stream.write_all(&count.to_be_bytes()).await.unwrap();
            }
        });
    }
}

/// Asks the service to count once, giving up after a second.
pub async fn bump(addr: &str) -> std::io::Result<u64> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(&[1]).await?;
    let mut reply = [0; 8];
    tokio::select! {
        read = stream.read_exact(&mut reply) => { read?; }
        _ = tokio::time::sleep(Duration::from_secs(1)) => {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
    }
    Ok(u64::from_be_bytes(reply))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[crashtest::test(seeds = 8)]
    async fn the_count_goes_up_in_a_simulation() {
        crashtest::node::create("counter", || async {
            serve("0.0.0.0:7000", "/count").await.unwrap();
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        for expected in 1..=3 {
            assert_eq!(bump("counter:7000").await.unwrap(), expected);
        }
    }

    #[crashtest::test(seeds = 4)]
    async fn a_task_tracker_waits_for_its_tasks_in_a_simulation() {
        let tracker = tokio_util::task::TaskTracker::new();
        for n in 0..3u64 {
            tracker.spawn(async move { tokio::time::sleep(Duration::from_millis(n)).await });
        }
        tracker.close();
        tracker.wait().await;
        assert!(tracker.is_empty());
    }

    #[tokio::test]
    async fn the_count_goes_up_on_real_tokio() {
        let path: &'static str =
            Box::leak(std::env::temp_dir().join(format!("count-{}", std::process::id())).to_string_lossy().into_owned().into_boxed_str());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let server_addr = addr.clone();
        tokio::spawn(async move { serve(&server_addr, path).await.unwrap() });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(bump(&addr).await.unwrap(), 1);
        assert_eq!(bump(&addr).await.unwrap(), 2);
        let _ = std::fs::remove_file(path);
    }
}
