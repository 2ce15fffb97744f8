//! Outside a simulation the same types are tokio's sockets, so a program written against
//! `crashtest_net` runs in production unchanged. (Loopback only.)

use crashtest_net::{TcpListener, TcpStream, UdpSocket, lookup_host};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn tcp_outside_a_simulation_uses_the_real_network() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, peer) = listener.accept().await.unwrap();
        assert_eq!(stream.peer_addr().unwrap(), peer);
        let (mut read, mut write) = stream.into_split();
        tokio::io::copy(&mut read, &mut write).await.unwrap();
    });
    let mut client = TcpStream::connect(addr).await.unwrap();
    client.set_nodelay(true).unwrap();
    assert!(client.nodelay().unwrap());
    client.write_all(b"real bytes").await.unwrap();
    client.shutdown().await.unwrap();
    let mut echoed = Vec::new();
    client.read_to_end(&mut echoed).await.unwrap();
    assert_eq!(echoed, b"real bytes");
    server.await.unwrap();
}

#[tokio::test]
async fn udp_outside_a_simulation_uses_the_real_network() {
    let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    a.send_to(b"datagram", b.local_addr().unwrap())
        .await
        .unwrap();
    let mut buf = [0; 16];
    let (n, from) = b.recv_from(&mut buf).await.unwrap();
    assert_eq!(
        (&buf[..n], from),
        (&b"datagram"[..], a.local_addr().unwrap())
    );
}

#[tokio::test]
async fn lookup_host_outside_a_simulation_asks_the_system() {
    let addrs: Vec<_> = lookup_host("127.0.0.1:80").await.unwrap().collect();
    assert_eq!(addrs, ["127.0.0.1:80".parse().unwrap()]);
}
