//! Generates the gRPC service and messages from `proto/kv.proto` with the protoc that
//! protoc-bin-vendored ships, so building needs no protoc on the machine.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure().compile_with_config(config, &["proto/kv.proto"], &["proto"])?;
    Ok(())
}
