//! placeholder for dep warmup
