//! What the benchmarks (`tests/benches/`) share: their settings from the environment and the
//! median they report.

/// The number in the environment variable `name`, or `default` when it is unset or not a
/// number.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The runs per figure: `XF_BENCH_RUNS`, default 5, at least 1.
pub fn runs() -> usize {
    env_number("XF_BENCH_RUNS", 5).max(1)
}

/// The median of `values` (the upper one of an even count); `values` must not be empty.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A new organization named "Bench" on `plan`, with its keys.
pub async fn organization(xf: &xf_core::Xf, plan: &str) -> xf_core::CreatedOrganization {
    xf.admin_create_organization(xf_core::NewOrganization {
        name: "Bench".to_owned(),
        plan: plan.to_owned(),
        shop_domain: None,
    })
    .await
    .expect("organization")
}
