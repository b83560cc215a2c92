//! The HTML of the public shared-report page (`/r/{token}`): pure functions from the audit to a
//! complete, self-contained HTML5 document, written as `maud` templates.
//!
//! The page is read by our customers' own clients, and everything it shows comes from crawled
//! third-party sites, so:
//!
//! - `maud` escapes every value interpolated into a template (`&`, `<`, `>` and `"`),
//!   attributes included, and writes every attribute value in double quotes. [`PreEscaped`]
//!   is used only for the constant [`STYLE`];
//! - a URL becomes a link only when it is `http://` or `https://` (see [`is_web_url`]), and then
//!   with `rel="nofollow noopener noreferrer"`; anything else (`javascript:`, `data:`) is text;
//! - the document loads nothing: no script, no font, no image, no other stylesheet. Its one
//!   `<style>` element holds exactly [`STYLE`], so the service can allow it in the
//!   `Content-Security-Policy` by hash (`style-src 'sha256-…'`). That is also why no element
//!   has a `style` attribute (a hash does not cover them): colours are classes, and the score
//!   gauge is drawn with SVG presentation attributes (`stroke-dasharray`, `transform`), which a
//!   CSP does not restrict.
//!
//! The findings are `<details>` groups, so the page needs no JavaScript to fold them. Critical
//! and high groups start open. Browsers do not print the content of a closed `<details>`;
//! newer ones (Chromium 131+, Safari 18.4+) are told to in [`STYLE`]'s print rules through
//! `::details-content`, and elsewhere the open groups (the ones that matter most) print and the
//! page says that opening a group includes it when printing. Rejected alternative: rendering
//! every group open, which makes a long audit a wall of text on a phone.
//!
//! The `"\n"` literals in the templates end each block element's line, so the page's source
//! reads one block per line; they are whitespace between elements and change no rendering.

use chrono::SecondsFormat;
use maud::{html, Markup, PreEscaped, DOCTYPE};
use xf_core::model::{ScanKind, Severity};
use xf_core::text::group_digits;
use xf_core::time::Timestamp;
use xf_core::{Audit, CheckFindings};

/// The page's one stylesheet. The documents embed exactly this string in their single
/// `<style>` element; the service's `Content-Security-Policy` allows it by its SHA-256, so any
/// change here changes that hash (which the service computes from this constant).
///
/// Mobile first: one column down to 320 px, and long URLs and evidence wrap anywhere, so no
/// width scrolls sideways; from 640 px the severity tiles sit in one row in a centred column
/// of at most 960 px. The light palette meets WCAG AA (4.5:1) for all text on its background,
/// and so does the dark one (`prefers-color-scheme: dark`, screens only: paper is white).
pub(crate) const STYLE: &str = r#"
:root{color-scheme:light dark;--bg:#f5f6f8;--card:#fff;--text:#1b1f24;--muted:#4a5360;--line:#d9dde3;--link:#1a56db;--track:#e3e6ea;--shadow:0 1px 2px rgba(16,24,40,.06),0 1px 3px rgba(16,24,40,.1);--critical:#b42318;--critical-bg:#fdecea;--high:#a3410a;--high-bg:#fdf0e6;--medium:#8a5a00;--medium-bg:#fdf5e0;--low:#175cd3;--low-bg:#eaf2fd;--good:#067647;--fair:#a3410a;--poor:#b42318}
@media screen and (prefers-color-scheme:dark){:root{--bg:#111418;--card:#1b1f26;--text:#e7e9ec;--muted:#a9b1bc;--line:#323843;--link:#8cb4ff;--track:#323843;--shadow:none;--critical:#ff8a80;--critical-bg:#3a1d1c;--high:#ffb36b;--high-bg:#3a2817;--medium:#f5cd5b;--medium-bg:#352c12;--low:#8cc4ff;--low-bg:#182c45;--good:#5fd39a;--fair:#ffb36b;--poor:#ff8a80}}
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--text);font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif;font-size:16px;line-height:1.5;overflow-wrap:anywhere}
.page{max-width:960px;margin:0 auto;padding:16px}
a{color:var(--link)}
a:focus-visible,summary:focus-visible{outline:3px solid var(--link);outline-offset:2px}
h1,h2,h3{line-height:1.25;margin:0 0 8px}
h1{font-size:1.5rem}
h2{font-size:1.25rem}
h3{font-size:1rem;margin-top:16px}
p{margin:0 0 8px}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.875em}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;box-shadow:var(--shadow);padding:16px;margin:0 0 16px}
.eyebrow{color:var(--muted);font-size:.875rem;font-weight:600;letter-spacing:.04em;text-transform:uppercase;margin:0 0 4px}
.property-url{font-size:1.0625rem;margin:0 0 12px;word-break:break-word;overflow-wrap:anywhere}
.meta{margin:0;color:var(--muted)}
.meta div{display:flex;flex-wrap:wrap;gap:0 8px}
.meta dt{font-weight:600}
.meta dd{margin:0}
.overview-row{display:flex;flex-wrap:wrap;align-items:center;gap:16px 32px}
.score{display:flex;flex-direction:column;align-items:center;flex:none}
.gauge{display:block;width:132px;height:132px}
.gauge-track{stroke:var(--track)}
.gauge-number{fill:var(--text)}
.band-good .gauge-value{stroke:var(--good)}
.band-fair .gauge-value{stroke:var(--fair)}
.band-poor .gauge-value{stroke:var(--poor)}
.band-label{font-weight:700;margin:4px 0 0}
.band-good .band-label{color:var(--good)}
.band-fair .band-label{color:var(--fair)}
.band-poor .band-label{color:var(--poor)}
.stats{flex:1 1 200px;min-width:0}
.stat-number{font-size:1.5rem;font-weight:700}
.hint{color:var(--muted);font-size:.875rem}
.sev-critical{--sev:var(--critical);--sev-bg:var(--critical-bg)}
.sev-high{--sev:var(--high);--sev-bg:var(--high-bg)}
.sev-medium{--sev:var(--medium);--sev-bg:var(--medium-bg)}
.sev-low{--sev:var(--low);--sev-bg:var(--low-bg)}
.tiles{list-style:none;margin:16px 0 0;padding:0;display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:12px}
.tile{border:1px solid var(--line);border-left:6px solid var(--sev);border-radius:8px;padding:12px;background:var(--card)}
.tile-count{display:block;font-size:1.75rem;font-weight:700;line-height:1.1;color:var(--sev)}
.tile-label{color:var(--muted);font-weight:600}
.tile.zero{border-left-color:var(--line)}
.tile.zero .tile-count{color:var(--muted)}
.check{background:var(--card);border:1px solid var(--line);border-left:6px solid var(--sev);border-radius:10px;box-shadow:var(--shadow);margin:0 0 12px}
.check>summary{cursor:pointer;padding:12px 16px}
.check-title{font-weight:700;margin-right:8px}
.badge{display:inline-block;padding:0 8px;border:1px solid var(--sev);border-radius:999px;background:var(--sev-bg);color:var(--sev);font-size:.75rem;font-weight:700;letter-spacing:.04em;line-height:1.6;text-transform:uppercase;vertical-align:middle}
.check-meta{display:block;color:var(--muted);font-size:.875rem;margin-top:4px}
.check-body{border-top:1px solid var(--line);padding:0 16px 16px}
.fix{white-space:pre-line}
.findings{list-style:none;margin:0;padding:0}
.findings li{border-top:1px solid var(--line);padding:8px 0}
.findings li:first-child{border-top:0}
.finding-url,.site-wide{display:block;font-weight:600;word-break:break-word;overflow-wrap:anywhere}
.evidence{display:block;color:var(--muted);font-size:.9375rem;white-space:pre-line;word-break:break-word;overflow-wrap:anywhere}
.more{color:var(--muted);font-style:italic;margin:8px 0 0}
.empty{text-align:center;padding:32px 16px}
.empty h2{color:var(--good)}
.notice{text-align:center;padding:32px 16px;margin-top:10vh}
.site-footer{color:var(--muted);font-size:.875rem;text-align:center;padding:8px 0 16px}
.trend-chart{display:block;width:100%;max-width:560px;height:auto;margin:0 0 12px}
.trend-grid{stroke:var(--line);stroke-width:1}
.trend-axis{fill:var(--muted);font-size:8px}
.trend-line{fill:none;stroke:var(--link);stroke-width:2.5;stroke-linejoin:round;stroke-linecap:round}
.trend-point{fill:var(--card);stroke:var(--link);stroke-width:2}
.trend-point.latest{fill:var(--link)}
.changes{list-style:none;margin:8px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:8px 24px}
.change-count{font-size:1.25rem;font-weight:700;margin-right:4px}
.change-opened .change-count{color:var(--critical)}
.change-resolved .change-count{color:var(--good)}
.change-reopened .change-count{color:var(--high)}
@media (min-width:640px){.page{padding:32px 24px}h1{font-size:2rem}.card{padding:24px}.tiles{grid-template-columns:repeat(4,minmax(0,1fr))}}
@media print{
@page{margin:15mm}
body{background:#fff;color:#000;font-size:11pt}
.page{max-width:none;padding:0}
.card,.check,.tile{box-shadow:none}
.card{border-color:#999}
a{color:inherit;text-decoration:none}
.screen-only{display:none}
.check>summary{break-after:avoid}
.tile,.findings li{break-inside:avoid}
}
@media print{details::details-content{content-visibility:visible}}
"#;

/// The `rel` of every link to a crawled site: no ranking credit, no window handle, no referrer.
const LINK_REL: &str = "nofollow noopener noreferrer";

/// The live report: the property, the score, the counts by severity and the findings by check.
pub(crate) fn audit_page(audit: &Audit) -> String {
    let body = html! {
        (audit_header(audit))
        main { "\n" (overview(audit)) (trend_section(audit)) (findings_section(audit)) } "\n"
        (site_footer())
    };
    document(&format!("SEO audit of {}", audit.property_name), body)
}

/// The page of an expired report link: which property it was, when it expired, and what to do.
pub(crate) fn expired_page(property_name: &str, expired_at: Timestamp) -> String {
    let body = html! {
        main.card.notice {
            "\n"
            h1 { "This report link has expired" } "\n"
            p {
                "The shared SEO audit of " strong { (property_name) }
                " stopped being available on " (time_element(expired_at)) "."
            } "\n"
            p { "To see it, ask the person who sent you this link for a new one." } "\n"
        } "\n"
    };
    document("This report link has expired", body)
}

/// The page of a token that names no report. It shows no data at all.
pub(crate) fn not_found_page() -> String {
    message_page(
        "Report not found",
        "This link does not lead to a report. Check that it was copied completely, or ask \
         the person who sent it for a new one.",
    )
}

/// A page with a heading and one paragraph, both plain text (escaped by the template): not
/// found, and the service's error answers.
pub(crate) fn message_page(title: &str, text: &str) -> String {
    let body = html! {
        main.card.notice { "\n" h1 { (title) } "\n" p { (text) } "\n" } "\n"
    };
    document(title, body)
}

/// Wraps `body` in the HTML5 document with the head every page shares; `title` is plain text.
fn document(title: &str, body: Markup) -> String {
    let page = html! {
        (DOCTYPE) "\n"
        html lang="en" {
            "\n"
            head {
                "\n"
                meta charset="utf-8"; "\n"
                meta name="viewport" content="width=device-width, initial-scale=1"; "\n"
                meta name="robots" content="noindex, nofollow"; "\n"
                meta name="referrer" content="no-referrer"; "\n"
                meta name="color-scheme" content="light dark"; "\n"
                title { (title) } "\n"
                // Verbatim: the CSP allows this element by the hash of exactly these bytes.
                style { (PreEscaped(STYLE)) } "\n"
            } "\n"
            body { "\n" div.page { "\n" (body) } "\n" } "\n"
        } "\n"
    }
    .into_string();
    shown_bidi_controls(page)
}

/// Unicode's bidirectional controls (embeddings, overrides, isolates and the implicit marks):
/// in a crawled title or a property name, U+202E makes `gnp.exe` read `exe.png`.
const BIDI_CONTROLS: &[char] = &[
    '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}',
    '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
];

/// `page` with every bidirectional control shown as its code point (`<U+202E>`, escaped),
/// so text reads in the order it was written. The page's own text holds none, so this
/// touches only what came from outside, wherever it stands (the `<title>` included).
fn shown_bidi_controls(page: String) -> String {
    if !page.contains(BIDI_CONTROLS) {
        return page;
    }
    let mut shown = String::with_capacity(page.len() + 32);
    for c in page.chars() {
        if BIDI_CONTROLS.contains(&c) {
            shown.push_str(&format!("&lt;U+{:04X}&gt;", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    shown
}

/// The report's header: the property's name and URL, when it was scanned and until when the
/// link works.
fn audit_header(audit: &Audit) -> Markup {
    html! {
        header.card {
            "\n"
            p.eyebrow { "SEO audit" } "\n"
            h1 { (audit.property_name) } "\n"
            p.property-url { (url_markup(&audit.property_url, "property-link")) } "\n"
            dl.meta {
                "\n"
                div { dt { "Scanned" } dd { (time_element(audit.scanned_at)) } } "\n"
                div { dt { "Link valid until" } dd { (time_element(audit.expires_at)) } } "\n"
            } "\n"
        } "\n"
    }
}

/// The overview card: the score gauge, pages scanned, issues found and the severity tiles.
fn overview(audit: &Audit) -> Markup {
    let band = Band::of(audit.score);
    let pages = u64::from(audit.pages_scanned);
    let total: u64 = audit.counts.iter().map(|(_, count)| count).sum();
    html! {
        section.card aria-labelledby="overview-title" {
            "\n"
            h2 #overview-title { "Overview" } "\n"
            div.overview-row {
                "\n"
                div.score.(band.class()) {
                    "\n" (gauge(audit.score))
                    p.band-label { (band.label()) } "\n"
                } "\n"
                div.stats {
                    "\n"
                    p {
                        span.stat-number { (group_digits(pages)) }
                        " " (noun(pages, "page", "pages")) " scanned"
                    } "\n"
                    p {
                        span.stat-number { (group_digits(total)) }
                        " " (noun(total, "issue", "issues")) " found"
                    } "\n"
                    p.hint { "Score: 90 to 100 is good, 50 to 89 fair, below 50 poor." } "\n"
                } "\n"
            } "\n"
            (count_tiles(&audit.counts))
        } "\n"
    }
}

/// The score band, which colours the gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Band {
    /// 90 and above.
    Good,
    /// 50 to 89.
    Fair,
    /// Below 50.
    Poor,
}

impl Band {
    /// The band of `score`.
    fn of(score: u32) -> Self {
        match score {
            90.. => Band::Good,
            50..=89 => Band::Fair,
            _ => Band::Poor,
        }
    }

    /// Its CSS class.
    fn class(self) -> &'static str {
        match self {
            Band::Good => "band-good",
            Band::Fair => "band-fair",
            Band::Poor => "band-poor",
        }
    }

    /// Its visible name, so that colour is not the only sign of it.
    fn label(self) -> &'static str {
        match self {
            Band::Good => "Good",
            Band::Fair => "Fair",
            Band::Poor => "Poor",
        }
    }
}

/// The gauge's ring radius in the 120×120 view box; the stroke is 12 wide, so it fits.
const GAUGE_RADIUS: f64 = 52.0;

/// The score as a ring filled clockwise from the top, the number in its centre. The colour
/// comes from the band class of the enclosing element; the `stroke` attributes are only the
/// fallback for a reader without CSS.
///
/// The circles are written `<circle …></circle>`: maud has no `/>`, and a bare `<circle …>`
/// would leave the element open in SVG, making the second circle a child of the first.
fn gauge(score: u32) -> Markup {
    let shown = score.min(100);
    let circumference = 2.0 * std::f64::consts::PI * GAUGE_RADIUS;
    let filled = circumference * f64::from(shown) / 100.0;
    html! {
        svg.gauge viewBox="0 0 120 120" width="132" height="132" role="img"
            aria-label={ "Score " (shown) " out of 100" } {
            circle.gauge-track cx="60" cy="60" r=(GAUGE_RADIUS) fill="none"
                stroke="#e3e6ea" stroke-width="12" {}
            circle.gauge-value cx="60" cy="60" r=(GAUGE_RADIUS) fill="none"
                stroke="#4a5360" stroke-width="12"
                stroke-dasharray=(format_args!("{filled:.2} {circumference:.2}"))
                transform="rotate(-90 60 60)" {}
            text.gauge-number x="60" y="60" text-anchor="middle" dominant-baseline="central"
                font-size="36" font-weight="700" { (shown) }
        } "\n"
    }
}

/// The trend card: the score over the property's recorded scans up to this one, and what
/// this scan changed since the one before. Nothing for a scan without a record.
fn trend_section(audit: &Audit) -> Markup {
    let Some(changes) = audit.changes else {
        return html! {};
    };
    let previous = audit
        .trend
        .len()
        .checked_sub(2)
        .and_then(|index| audit.trend.get(index));
    html! {
        section.card aria-labelledby="trend-title" {
            "\n"
            h2 #trend-title { "Trend" } "\n"
            @if audit.trend.len() >= 2 { (trend_chart(&audit.trend)) }
            @if let Some(previous) = previous {
                p.since {
                    "Since the previous scan (" (time_element(previous.completed_at)) "): score "
                    (previous.score) " → " (audit.score) " ("
                    (signed(i64::from(audit.score) - i64::from(previous.score))) ")."
                } "\n"
                ul.changes aria-label="Changes since the previous scan" {
                    "\n"
                    li.change-opened { span.change-count { (group_digits(changes.opened)) } (noun(changes.opened, "new issue", "new issues")) } "\n"
                    li.change-resolved { span.change-count { (group_digits(changes.resolved)) } "resolved" } "\n"
                    li.change-reopened { span.change-count { (group_digits(changes.reopened)) } "reopened" } "\n"
                } "\n"
            } @else {
                p.since { "The first recorded scan of this property: everything it found is new." } "\n"
            }
        } "\n"
    }
}

/// `+n`, `-n` or `±0`.
fn signed(delta: i64) -> String {
    match delta {
        0 => "±0".to_owned(),
        d if d > 0 => format!("+{d}"),
        d => format!("−{}", d.unsigned_abs()),
    }
}

/// The chart's view box: 320 × 90, the plot inside the margins.
const CHART: (f64, f64) = (320.0, 90.0);
const PLOT_LEFT: f64 = 26.0;
const PLOT_RIGHT: f64 = 312.0;
const PLOT_TOP: f64 = 6.0;
const PLOT_BOTTOM: f64 = 82.0;

/// The scores as a line over a 0 to 100 scale, one point per scan (oldest left), each with a
/// tooltip; an inline SVG drawn with presentation attributes and classes only, so the page
/// stays without script and its CSP holds. Needs at least two points.
fn trend_chart(points: &[xf_core::TrendPoint]) -> Markup {
    let step = (PLOT_RIGHT - PLOT_LEFT) / (points.len().saturating_sub(1).max(1)) as f64;
    let y = |score: u32| PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * f64::from(score.min(100)) / 100.0;
    let placed: Vec<(f64, f64, &xf_core::TrendPoint)> = points
        .iter()
        .enumerate()
        .map(|(index, point)| (PLOT_LEFT + step * index as f64, y(point.score), point))
        .collect();
    let line: Vec<String> = placed
        .iter()
        .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
        .collect();
    let scores: Vec<String> = points.iter().map(|p| p.score.to_string()).collect();
    let label = format!(
        "Score of the last {} scans, oldest first: {}",
        points.len(),
        scores.join(", ")
    );
    html! {
        svg.trend-chart viewBox=(format_args!("0 0 {} {}", CHART.0, CHART.1)) role="img"
            aria-label=(label) {
            @for score in [0_u32, 50, 90, 100] {
                line.trend-grid x1=(PLOT_LEFT) x2=(PLOT_RIGHT) y1=(y(score)) y2=(y(score))
                    stroke="#d9dde3" {}
            }
            @for score in [0_u32, 50, 100] {
                text.trend-axis x=(PLOT_LEFT - 5.0) y=(y(score)) text-anchor="end"
                    dominant-baseline="central" font-size="8" { (score) }
            }
            polyline.trend-line points=(line.join(" ")) fill="none" stroke="#1a56db"
                stroke-width="2.5" {}
            @for (index, (x, y, point)) in placed.iter().enumerate() {
                circle.trend-point.latest[index + 1 == placed.len()] cx=(format_args!("{x:.1}"))
                    cy=(format_args!("{y:.1}")) r="4" fill="#fff" stroke="#1a56db" stroke-width="2" {
                    title { (human_time(point.completed_at)) ": " (point.score) }
                }
            }
        } "\n"
    }
}

/// One tile per severity with its number of findings.
fn count_tiles(counts: &[(Severity, u64)]) -> Markup {
    html! {
        ul.tiles aria-label="Issues by severity" {
            "\n"
            @for &(severity, count) in counts {
                li.tile.{ "sev-" (severity.as_str()) }.zero[count == 0] {
                    span.tile-count { (group_digits(count)) }
                    span.tile-label { (severity_label(severity)) }
                } "\n"
            }
        } "\n"
    }
}

/// The findings grouped by check, or the empty state.
fn findings_section(audit: &Audit) -> Markup {
    if audit.checks.is_empty() {
        return empty_state(audit.pages_scanned);
    }
    html! {
        section aria-labelledby="findings-title" {
            "\n"
            h2 #findings-title { "Findings" } "\n"
            p.hint.screen-only {
                "Critical and high-severity checks are open. Select any other check to show \
                 its pages; open checks are included when printing."
            } "\n"
            @for check in &audit.checks {
                (check_group(check))
            }
        } "\n"
    }
}

/// What the page shows when the scan found nothing.
fn empty_state(pages_scanned: u32) -> Markup {
    let pages = u64::from(pages_scanned);
    html! {
        section.card.empty {
            "\n"
            h2 { "No issues found" } "\n"
            p {
                "The scan of " (group_digits(pages)) " " (noun(pages, "page", "pages"))
                " found nothing to fix."
            } "\n"
        } "\n"
    }
}

/// One check's group: a summary line (title, severity, id, how many), then how to fix it and
/// what was found. Critical and high groups start open.
fn check_group(check: &CheckFindings) -> Markup {
    let open = match check.severity {
        Severity::Critical | Severity::High => true,
        Severity::Medium | Severity::Low => false,
    };
    let sev = check.severity.as_str();
    html! {
        details.check.{ "sev-" (sev) } open[open] {
            "\n"
            summary {
                span.check-title { (check.title) } " "
                span.badge.{ "sev-" (sev) } { (severity_label(check.severity)) }
                span.check-meta { code { (check.check) } " · " (how_many(check)) }
            } "\n"
            div.check-body {
                "\n"
                h3 { "How to fix" } "\n"
                p.fix { (check.how_to_fix) } "\n"
                (findings_list(check))
            } "\n"
        } "\n"
    }
}

/// How many findings a check has, in the words of its kind: pages, or site-wide findings.
fn how_many(check: &CheckFindings) -> String {
    let total = u64::try_from(check.total).unwrap_or(u64::MAX);
    let (one, many) = match check.scan_kind {
        ScanKind::Page => ("affected page", "affected pages"),
        ScanKind::Site => ("site-wide finding", "site-wide findings"),
    };
    format!("{} {}", group_digits(total), noun(total, one, many))
}

/// The listed findings of a check, and "and N more" for those left out.
fn findings_list(check: &CheckFindings) -> Markup {
    let heading = match check.scan_kind {
        ScanKind::Page => "Affected pages",
        ScanKind::Site => "Found",
    };
    let more = check.total.saturating_sub(check.findings.len());
    let more = u64::try_from(more).unwrap_or(u64::MAX);
    html! {
        @if !check.findings.is_empty() {
            h3 { (heading) } "\n"
            ul.findings {
                "\n"
                @for (url, evidence) in &check.findings {
                    (finding_item(url.as_deref(), evidence))
                }
            } "\n"
        }
        @if more > 0 {
            p.more { "and " (group_digits(more)) " more" } "\n"
        }
    }
}

/// One finding: the page (or "Whole site" for a site-wide one) and what was found there.
fn finding_item(url: Option<&str>, evidence: &str) -> Markup {
    html! {
        li {
            @match url {
                Some(url) => (url_markup(url, "finding-url")),
                None => span.site-wide { "Whole site" },
            }
            @if !evidence.is_empty() {
                span.evidence { (evidence) }
            }
        } "\n"
    }
}

/// `url` shown as its own text: a link when it is a web URL, plain text otherwise.
fn url_markup(url: &str, class: &str) -> Markup {
    html! {
        @if is_web_url(url) {
            a.(class) href=(url) rel=(LINK_REL) { (url) }
        } @else {
            span.(class) { (url) }
        }
    }
}

/// Whether `url` starts with `http://` or `https://` (in any case): the only URLs that become
/// links. Leading whitespace does not pass, although browsers would strip it, so a
/// `" javascript:"` never reaches an `href`.
fn is_web_url(url: &str) -> bool {
    ["http://", "https://"].iter().any(|scheme| {
        url.get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
    })
}

/// The footer of the live report.
fn site_footer() -> Markup {
    html! {
        footer.site-footer {
            "\n"
            p {
                "A read-only SEO audit, shared by the site's owner. \
                 It shows the site as it was when it was scanned."
            } "\n"
        } "\n"
    }
}

/// `at` as a `<time>` element: machine-readable RFC 3339 and the human form.
fn time_element(at: Timestamp) -> Markup {
    let datetime = at.as_datetime().to_rfc3339_opts(SecondsFormat::Secs, true);
    html! { time datetime=(datetime) { (human_time(at)) } }
}

/// `at` as people read it: "23 November 2026, 19:20 UTC".
fn human_time(at: Timestamp) -> String {
    at.as_datetime().format("%-d %B %Y, %H:%M UTC").to_string()
}

/// The readable name of a severity.
fn severity_label(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical => "Critical",
        Severity::High => "High",
        Severity::Medium => "Medium",
        Severity::Low => "Low",
    }
}

/// `one` for a count of 1, `many` otherwise.
fn noun<'a>(count: u64, one: &'a str, many: &'a str) -> &'a str {
    if count == 1 {
        one
    } else {
        many
    }
}

#[cfg(test)]
mod tests {
    use xf_core::MAX_LISTED_FINDINGS;

    use super::*;

    /// A timestamp from an RFC 3339 literal.
    fn at(text: &str) -> Timestamp {
        Timestamp::parse_rfc3339(text).expect("a valid test timestamp")
    }

    /// The four severities with the given counts.
    fn counts(values: [u64; 4]) -> Vec<(Severity, u64)> {
        Severity::ALL.into_iter().zip(values).collect()
    }

    /// A check with the given findings, all of them listed.
    fn check(
        id: &str,
        severity: Severity,
        kind: ScanKind,
        findings: Vec<(Option<String>, String)>,
    ) -> CheckFindings {
        CheckFindings {
            check: id.to_owned(),
            title: format!("Title of {id}"),
            severity,
            scan_kind: kind,
            how_to_fix: format!("Fix {id}."),
            total: findings.len(),
            findings,
        }
    }

    /// An ordinary audit of example.com with one check of each severity.
    fn sample() -> Audit {
        Audit {
            property_name: "Example shop".to_owned(),
            property_url: "https://example.com/".to_owned(),
            scanned_at: at("2026-11-23T19:20:45Z"),
            expires_at: at("2026-12-23T19:20:45Z"),
            score: 87,
            pages_scanned: 1234,
            counts: counts([1, 2, 0, 1]),
            checks: vec![
                check(
                    "broken_page",
                    Severity::Critical,
                    ScanKind::Page,
                    vec![(Some("https://example.com/a".into()), "HTTP 500".into())],
                ),
                check(
                    "missing_title",
                    Severity::High,
                    ScanKind::Page,
                    vec![
                        (Some("https://example.com/b".into()), "No <title>".into()),
                        (Some("https://example.com/c".into()), String::new()),
                    ],
                ),
                check(
                    "no_sitemap",
                    Severity::Low,
                    ScanKind::Site,
                    vec![(None, "sitemap.xml returned 404".into())],
                ),
            ],
            trend: vec![
                xf_core::TrendPoint {
                    completed_at: at("2026-11-09T19:20:45Z"),
                    score: 71,
                },
                xf_core::TrendPoint {
                    completed_at: at("2026-11-16T19:20:45Z"),
                    score: 92,
                },
                xf_core::TrendPoint {
                    completed_at: at("2026-11-23T19:20:45Z"),
                    score: 87,
                },
            ],
            changes: Some(xf_core::model::ChangeCounts {
                opened: 2,
                resolved: 1,
                reopened: 1,
            }),
        }
    }

    /// An audit whose every data field is an attack.
    fn hostile() -> Audit {
        let attack = "\"><img src=x onerror=alert(1)>";
        Audit {
            property_name: "<script>alert('name')</script>".to_owned(),
            property_url: "javascript:alert(document.cookie)".to_owned(),
            scanned_at: at("2026-11-23T19:20:00Z"),
            expires_at: at("2026-12-23T19:20:00Z"),
            score: 10,
            pages_scanned: 3,
            counts: counts([2, 0, 0, 1]),
            checks: vec![
                CheckFindings {
                    check: format!("id{attack}"),
                    title: format!("title{attack}<script>alert(2)</script>"),
                    severity: Severity::Critical,
                    scan_kind: ScanKind::Page,
                    how_to_fix: format!("fix{attack}<style>body{{display:none}}</style>"),
                    total: 2,
                    findings: vec![
                        (
                            Some(format!("https://evil.example/{attack}")),
                            format!("evidence{attack}<script>alert(3)</script>"),
                        ),
                        (
                            Some(" JavaScript:alert(4)".to_owned()),
                            "<p style=\"color:red\">'x'</p>".to_owned(),
                        ),
                    ],
                },
                check(
                    "site",
                    Severity::Low,
                    ScanKind::Site,
                    vec![(None, "</li></ul></details><script>alert(5)</script>".into())],
                ),
            ],
            trend: vec![xf_core::TrendPoint {
                completed_at: at("2026-11-23T19:20:00Z"),
                score: 10,
            }],
            changes: Some(xf_core::model::ChangeCounts {
                opened: 3,
                resolved: 0,
                reopened: 0,
            }),
        }
    }

    /// The content of the document's `<style>` elements.
    fn style_contents(html: &str) -> Vec<&str> {
        html.split("<style>")
            .skip(1)
            .filter_map(|rest| rest.split("</style>").next())
            .collect()
    }

    /// Every page this module renders, for the checks that hold on all of them.
    fn all_pages() -> Vec<String> {
        let mut empty = sample();
        empty.checks.clear();
        empty.counts = counts([0, 0, 0, 0]);
        vec![
            audit_page(&sample()),
            audit_page(&hostile()),
            audit_page(&empty),
            expired_page("<b>Shop</b>", at("2026-11-23T19:20:00Z")),
            not_found_page(),
        ]
    }

    #[test]
    fn hostile_values_are_escaped_everywhere() {
        let html = audit_page(&hostile());
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("\"><img"), "{html}");
        assert!(!html.contains("</li></ul></details><script"), "{html}");
        assert_eq!(html.matches("<style").count(), 1);
        assert!(!html.contains("style=\""));
        // The escaped forms are shown as text.
        assert!(html.contains("&lt;script&gt;alert('name')&lt;/script&gt;"));
        assert!(html.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
        assert!(html.contains("title&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
        assert!(html.contains("id&quot;&gt;&lt;img"));
        assert!(html.contains("fix&quot;&gt;&lt;img"));
        assert!(html.contains("evidence&quot;&gt;&lt;img"));
        assert!(html.contains("&lt;p style=&quot;color:red&quot;&gt;'x'&lt;/p&gt;"));
        assert!(html.contains("&lt;/li&gt;&lt;/ul&gt;&lt;/details&gt;&lt;script&gt;"));
        // The title element escapes the name too.
        assert!(html.contains("<title>SEO audit of &lt;script&gt;"));
        // The web URL is a link, escaped inside its attribute as well.
        assert!(html.contains(
            "href=\"https://evil.example/&quot;&gt;&lt;img src=x onerror=alert(1)&gt;\" \
             rel=\"nofollow noopener noreferrer\""
        ));
    }

    #[test]
    fn bidirectional_controls_are_shown_not_obeyed() {
        let mut audit = sample();
        audit.property_name = "Shop \u{202E}gnp.exe".to_owned();
        audit.checks[0].title = "Title \u{2066}x\u{2069}".to_owned();
        audit.checks[0].findings[0].1 = "evidence \u{202D}\u{200F}".to_owned();
        let html = audit_page(&audit);
        for control in BIDI_CONTROLS {
            assert!(
                !html.contains(*control),
                "U+{:04X} left in the page",
                u32::from(*control)
            );
        }
        assert!(html.contains("<title>SEO audit of Shop &lt;U+202E&gt;gnp.exe</title>"));
        assert!(html.contains("Shop &lt;U+202E&gt;gnp.exe"));
        assert!(html.contains("Title &lt;U+2066&gt;x&lt;U+2069&gt;"));
        assert!(html.contains("evidence &lt;U+202D&gt;&lt;U+200F&gt;"));
    }

    #[test]
    fn only_web_urls_become_links() {
        let html = audit_page(&hostile());
        assert!(!html.to_ascii_lowercase().contains("href=\"javascript"));
        assert!(!html.to_ascii_lowercase().contains("href=\" javascript"));
        assert!(
            html.contains("<span class=\"property-link\">javascript:alert(document.cookie)</span>")
        );
        assert!(html.contains("<span class=\"finding-url\"> JavaScript:alert(4)</span>"));
        assert_eq!(html.matches("href=").count(), 1);

        let html = audit_page(&sample());
        assert!(html.contains(
            "<a class=\"property-link\" href=\"https://example.com/\" \
             rel=\"nofollow noopener noreferrer\">https://example.com/</a>"
        ));
        for (url, web) in [
            ("HTTPS://EXAMPLE.COM", true),
            ("Http://x", true),
            ("https:/x", false),
            ("ftp://x", false),
            ("data:text/html,x", false),
            ("", false),
            ("é", false),
        ] {
            assert_eq!(is_web_url(url), web, "{url}");
        }
    }

    #[test]
    fn urls_cannot_leave_their_attribute_or_link_to_other_schemes() {
        let mut audit = sample();
        audit.property_url = "data:text/html,<script>alert(1)</script>".to_owned();
        audit.checks.truncate(1);
        audit.checks[0].findings = vec![
            (
                Some("https://x.example/?a='b'&c=\"d\" onmouseover=alert(2) x=\"".to_owned()),
                String::new(),
            ),
            (Some("javascript:alert(3)".to_owned()), String::new()),
        ];
        audit.checks[0].total = 2;
        let html = audit_page(&audit);
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains(
            "<span class=\"property-link\">data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;</span>"
        ));
        assert!(html.contains("<span class=\"finding-url\">javascript:alert(3)</span>"));
        // The one link: its value is in double quotes and its `"` are escaped, so neither quote
        // ends it (a `'` needs no escaping there).
        assert_eq!(html.matches("href=").count(), 1, "{html}");
        assert!(html.contains(
            "<a class=\"finding-url\" \
             href=\"https://x.example/?a='b'&amp;c=&quot;d&quot; onmouseover=alert(2) x=&quot;\" \
             rel=\"nofollow noopener noreferrer\">"
        ));
        assert!(!html.contains("\" onmouseover"), "{html}");
    }

    #[test]
    fn every_page_has_one_style_element_and_nothing_external() {
        for html in all_pages() {
            assert_eq!(style_contents(&html), vec![STYLE], "{html}");
            assert_eq!(html.matches("<style").count(), 1, "{html}");
            assert!(!html.contains("style=\""), "{html}");
            assert!(!html.contains("style='"), "{html}");
            assert!(!html.contains("<script"), "{html}");
            assert!(!html.contains("<link"), "{html}");
            assert!(!html.contains("<img"), "{html}");
            assert!(!html.contains("url("), "{html}");
            assert!(!html.contains("@import"), "{html}");
            assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
            assert!(html.contains("<meta charset=\"utf-8\">"));
            assert!(html.contains(
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            ));
            assert!(html.contains("<meta name=\"robots\" content=\"noindex, nofollow\">"));
            assert!(html.contains("<meta name=\"referrer\" content=\"no-referrer\">"));
            assert!(html.trim_end().ends_with("</html>"));
        }
        // The clean sample has no `style=` text at all.
        assert!(!audit_page(&sample()).contains("style="));
    }

    #[test]
    fn the_live_page_shows_the_audit() {
        let html = audit_page(&sample());
        assert!(html.contains("<title>SEO audit of Example shop</title>"));
        assert!(html.contains("<h1>Example shop</h1>"));
        assert!(html.contains(
            "<time datetime=\"2026-11-23T19:20:45Z\">23 November 2026, 19:20 UTC</time>"
        ));
        assert!(html.contains("23 December 2026, 19:20 UTC"));
        assert!(html.contains("role=\"img\" aria-label=\"Score 87 out of 100\""));
        assert!(html.contains(">87</text>"));
        assert!(html.contains("score band-fair"));
        assert!(html.contains("1,234</span> pages scanned"));
        assert!(html.contains("4</span> issues found"));
        assert!(html.contains("<li class=\"tile sev-medium zero\">"));
        assert_eq!(html.matches("class=\"tile ").count(), 4);
        assert!(html.contains("<details class=\"check sev-critical\" open>"));
        assert!(html.contains("<details class=\"check sev-high\" open>"));
        assert!(html.contains("<details class=\"check sev-low\">"));
        assert!(html.contains("<code>missing_title</code> · 2 affected pages"));
        assert!(html.contains("<code>no_sitemap</code> · 1 site-wide finding"));
        assert!(html.contains("<p class=\"fix\">Fix broken_page.</p>"));
        assert!(html.contains("No &lt;title&gt;"));
        assert!(html.contains("<span class=\"site-wide\">Whole site</span>"));
        assert!(!html.contains("No issues found"));
        assert!(!html.contains(" more</p>"));
    }

    #[test]
    fn the_trend_shows_the_scores_and_the_changes_since_the_previous_scan() {
        let html = audit_page(&sample());
        assert!(html.contains("<h2 id=\"trend-title\">Trend</h2>"));
        assert!(html.contains("aria-label=\"Score of the last 3 scans, oldest first: 71, 92, 87\""));
        // Three points, left to right, higher scores higher up; the latest marked.
        assert!(
            html.contains("points=\"26.0,28.0 169.0,12.1 312.0,15.9\""),
            "{html}"
        );
        assert_eq!(html.matches("class=\"trend-point").count(), 3);
        assert_eq!(html.matches("class=\"trend-point latest\"").count(), 1);
        assert!(html.contains("<title>16 November 2026, 19:20 UTC: 92</title>"));
        assert!(html.contains("score 92 → 87 (−5)."));
        assert!(html.contains("2</span>new issues</li>"));
        assert!(html.contains("1</span>resolved</li>"));
        assert!(html.contains("1</span>reopened</li>"));

        // The first recorded scan: no chart, no comparison.
        let first = audit_page(&hostile());
        assert!(first.contains("The first recorded scan of this property"));
        assert!(!first.contains("<svg class=\"trend-chart\""));
        // A scan from before history was kept: no trend card at all.
        let older = audit_page(&Audit {
            trend: Vec::new(),
            changes: None,
            ..sample()
        });
        assert!(!older.contains("id=\"trend-title\""));
    }

    #[test]
    fn the_gauge_follows_the_score_bands() {
        for (score, band) in [
            (100, Band::Good),
            (90, Band::Good),
            (89, Band::Fair),
            (50, Band::Fair),
            (49, Band::Poor),
            (0, Band::Poor),
        ] {
            assert_eq!(Band::of(score), band, "{score}");
        }
        assert!(gauge(0)
            .into_string()
            .contains("stroke-dasharray=\"0.00 326.73\""));
        assert!(gauge(100)
            .into_string()
            .contains("stroke-dasharray=\"326.73 326.73\""));
        assert!(gauge(250).into_string().contains("Score 100 out of 100"));
    }

    #[test]
    fn unlisted_findings_are_counted() {
        let mut audit = sample();
        let listed: Vec<(Option<String>, String)> = (0..MAX_LISTED_FINDINGS)
            .map(|i| (Some(format!("https://example.com/{i}")), "x".to_owned()))
            .collect();
        audit.checks[0].findings = listed;
        audit.checks[0].total = 1250;
        let html = audit_page(&audit);
        assert!(html.contains("<p class=\"more\">and 1,150 more</p>"));
        assert!(html.contains("1,250 affected pages"));
        assert_eq!(html.matches(" more</p>").count(), 1);
    }

    #[test]
    fn no_findings_show_the_empty_state() {
        let mut audit = sample();
        audit.checks.clear();
        audit.counts = counts([0, 0, 0, 0]);
        audit.score = 100;
        audit.pages_scanned = 1;
        let html = audit_page(&audit);
        assert!(html.contains("<h2>No issues found</h2>"));
        assert!(html.contains("The scan of 1 page found nothing to fix."));
        assert!(html.contains("0</span> issues found"));
        assert!(!html.contains("<details"));
        assert_eq!(html.matches("<main>").count(), 1);
        assert_eq!(html.matches("</main>").count(), 1);
    }

    #[test]
    fn the_expired_page_names_the_property_and_the_date() {
        let html = expired_page("Shop <&> \"Co\"", at("2026-11-23T19:20:00Z"));
        assert!(html.contains("<title>This report link has expired</title>"));
        assert!(html.contains("<h1>This report link has expired</h1>"));
        assert!(html.contains("<strong>Shop &lt;&amp;&gt; &quot;Co&quot;</strong>"));
        assert!(html.contains("23 November 2026, 19:20 UTC"));
        assert!(html.contains("ask the person who sent you this link for a new one"));
    }

    #[test]
    fn the_not_found_page_says_so() {
        let html = not_found_page();
        assert!(html.contains("<title>Report not found</title>"));
        assert!(html.contains("<h1>Report not found</h1>"));
    }

    #[test]
    fn digits_are_grouped_by_thousands() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (123_456, "123,456"),
            (1_234_567, "1,234,567"),
        ] {
            assert_eq!(group_digits(n), text);
        }
    }
}
