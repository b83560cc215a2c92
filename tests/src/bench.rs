//! What the benchmarks (`tests/benches/`) share: their settings from the environment, the
//! smoke mode, and the median they report.
//!
//! With `XF_BENCH_SMOKE=1` a benchmark makes one small run: it shows the benchmark still works
//! end to end (its own checks of what it measured included) and gives no figure to quote.
//! `.ci/test` runs every benchmark so, as `cargo test -p xf-tests --bench '*'` (the test
//! profile, whose build the tests share), so that one that no longer runs fails CI.

/// The number in the environment variable `name`, or `default` when it is unset or not a
/// number.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Whether the environment variable `name` is set, and neither empty nor `0`.
pub fn flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Whether this is a smoke run (`XF_BENCH_SMOKE` set and not `0`).
pub fn smoke() -> bool {
    flag("XF_BENCH_SMOKE")
}

/// A size the environment variable `name` may set: `default` for a measuring run, `small`
/// for a smoke run.
pub fn size(name: &str, default: usize, small: usize) -> usize {
    env_number(name, if smoke() { small } else { default })
}

/// The runs per figure: `XF_BENCH_RUNS`, default 5 (1 in a smoke run), at least 1.
pub fn runs() -> usize {
    size("XF_BENCH_RUNS", 5, 1).max(1)
}

/// The median of `values` (the upper one of an even count); `values` must not be empty.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `values` as a list for a report line, `digits` after the point.
fn listed(values: &[f64], digits: usize) -> String {
    let shown: Vec<String> = values.iter().map(|v| format!("{v:.digits$}")).collect();
    shown.join(", ")
}

/// Prints one figure's line: `label`, the median of `runs` in `unit`, and every run.
pub fn report(label: &str, runs: &[f64], unit: &str) {
    println!(
        "{label:<12} median {:>8.0} {unit}   (runs: {})",
        median(runs.to_vec()),
        listed(runs, 0)
    );
}

/// Prints the anchor's line (`anchors`, the plain-SQL runs alternating with `figures`) and
/// the ratio of each pair, with their median.
pub fn report_anchor(figures: &[f64], anchors: &[f64], unit: &str) {
    report("plain SQL", anchors, unit);
    let ratios: Vec<f64> = figures.iter().zip(anchors).map(|(f, a)| f / a).collect();
    println!(
        "{:<12} median {:>8.2}   (pairs: {})",
        "xf / plain",
        median(ratios.clone()),
        listed(&ratios, 2)
    );
}

/// A new organization named "Bench" on `plan`, with its keys.
pub async fn organization(xf: &xf_core::Xf, plan: &str) -> xf_core::CreatedOrganization {
    xf.admin()
        .create_organization(xf_core::NewOrganization {
            name: "Bench".to_owned(),
            plan: plan.to_owned(),
            shop_domain: None,
        })
        .await
        .expect("organization")
}
