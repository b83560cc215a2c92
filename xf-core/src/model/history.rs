//! Scan history: each completed scan's figures and what it changed in the property's issues,
//! kept by the transaction that completes the scan (`GET /properties/{id}/scans` and
//! `/scans/{jobId}/changes`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{IssueStatus, Severity};
use crate::ids::{IssueId, JobId, OrganizationId, PropertyId};
use crate::time::Timestamp;

/// Counts of a scan's findings by severity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SeverityCounts {
    /// Critical findings.
    pub critical: u64,
    /// High findings.
    pub high: u64,
    /// Medium findings.
    pub medium: u64,
    /// Low findings.
    pub low: u64,
}

impl SeverityCounts {
    /// Counts one finding of `severity`.
    pub fn add(&mut self, severity: Severity) {
        let count = match severity {
            Severity::Critical => &mut self.critical,
            Severity::High => &mut self.high,
            Severity::Medium => &mut self.medium,
            Severity::Low => &mut self.low,
        };
        *count += 1;
    }
}

/// What a scan, or the scans between two, did to a property's issues.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChangeCounts {
    /// Issues found for the first time.
    pub opened: u64,
    /// Open issues no longer found on what the scan reached.
    pub resolved: u64,
    /// Resolved or fixed issues found again.
    pub reopened: u64,
}

impl ChangeCounts {
    /// Counts one change.
    pub fn add(&mut self, change: IssueChange) {
        let count = match change {
            IssueChange::Opened => &mut self.opened,
            IssueChange::Resolved => &mut self.resolved,
            IssueChange::Reopened => &mut self.reopened,
        };
        *count += 1;
    }

    /// Counts `changes`.
    pub fn of(changes: &[IssueChangeRecord]) -> Self {
        let mut counts = ChangeCounts::default();
        for change in changes {
            counts.add(change.change);
        }
        counts
    }
}

/// What a scan did to one issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum IssueChange {
    /// Found for the first time.
    Opened,
    /// Open, and no longer found where the scan looked.
    Resolved,
    /// Resolved or fixed, and found again.
    Reopened,
}

impl IssueChange {
    /// Every change, in the order lists show them.
    pub const ALL: [IssueChange; 3] = [
        IssueChange::Opened,
        IssueChange::Reopened,
        IssueChange::Resolved,
    ];

    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            IssueChange::Opened => "opened",
            IssueChange::Resolved => "resolved",
            IssueChange::Reopened => "reopened",
        }
    }

    /// Parses a wire name.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|change| change.as_str() == text)
    }

    /// The change a finding makes to the issue of its check and subject, given that issue's
    /// state before the scan (`None`: there was none): a new issue opens, a resolved or fixed
    /// one reopens, an open one stays open (no change).
    pub fn of_finding(before: Option<IssueStatus>) -> Option<Self> {
        match before {
            None => Some(IssueChange::Opened),
            Some(IssueStatus::Resolved | IssueStatus::Fixed) => Some(IssueChange::Reopened),
            Some(IssueStatus::Open) => None,
        }
    }
}

/// A completed scan's figures, written with its completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanRecord {
    /// The scan's job.
    pub job_id: JobId,
    /// The scanned property's organization.
    pub organization_id: OrganizationId,
    /// The scanned property.
    pub property_id: PropertyId,
    /// When it completed.
    pub completed_at: Timestamp,
    /// The site's score, 0 to 100.
    pub score: u32,
    /// Pages audited.
    pub pages_scanned: u64,
    /// Findings.
    pub issues_count: u64,
    /// Findings by severity.
    pub by_severity: SeverityCounts,
    /// Findings by check id.
    pub by_check: BTreeMap<String, u64>,
    /// What it changed.
    pub changes: ChangeCounts,
}

/// One issue's change by one scan, in the order scans completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueChangeRecord {
    /// The scan.
    pub job_id: JobId,
    /// The issue.
    pub issue_id: IssueId,
    /// The issue's check.
    pub issue_type: String,
    /// What the scan did to it.
    pub change: IssueChange,
}

/// The net change of each issue over a run of consecutive scans, from their change records
/// oldest first: an issue first opened and last open was `opened`; first reopened (it was
/// not open before the run) and last open, `reopened`; first resolved (it was open before the
/// run) and last resolved, `resolved`. An issue that ends as it began (resolved then reopened;
/// opened or reopened, then resolved) has no net change. Sorted by issue id.
pub fn net_changes(records: &[IssueChangeRecord]) -> Vec<(IssueId, String, IssueChange)> {
    let mut spans: BTreeMap<&str, (&IssueChangeRecord, &IssueChangeRecord)> = BTreeMap::new();
    for record in records {
        spans
            .entry(record.issue_id.as_str())
            .and_modify(|span| span.1 = record)
            .or_insert((record, record));
    }
    spans
        .into_values()
        .filter_map(|(first, last)| {
            let net = match (first.change, last.change) {
                (IssueChange::Opened, IssueChange::Opened | IssueChange::Reopened) => {
                    IssueChange::Opened
                }
                (IssueChange::Reopened, IssueChange::Opened | IssueChange::Reopened) => {
                    IssueChange::Reopened
                }
                (IssueChange::Resolved, IssueChange::Resolved) => IssueChange::Resolved,
                _ => return None,
            };
            Some((last.issue_id.clone(), last.issue_type.clone(), net))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Id;
    use proptest::prelude::*;

    /// The id of issue `n`: ids of greater `n` sort later.
    fn issue_id(n: u8) -> IssueId {
        IssueId::derived(&[n; 16])
    }

    fn record(issue: u8, change: IssueChange) -> IssueChangeRecord {
        IssueChangeRecord {
            job_id: JobId::new(),
            issue_id: issue_id(issue),
            issue_type: "title_missing".into(),
            change,
        }
    }

    #[test]
    fn a_run_nets_each_issue_s_first_and_last_change() {
        use IssueChange::*;
        let records = [
            record(1, Opened),
            record(2, Resolved),
            record(3, Resolved),
            record(1, Resolved),
            record(3, Reopened),
            record(4, Reopened),
            record(5, Opened),
            record(5, Resolved),
            record(5, Reopened),
        ];
        let net: Vec<(IssueId, IssueChange)> = net_changes(&records)
            .into_iter()
            .map(|(id, _, change)| (id, change))
            .collect();
        assert_eq!(
            net,
            [
                (issue_id(2), Resolved),
                (issue_id(4), Reopened),
                (issue_id(5), Opened),
            ]
        );
    }

    /// An issue's state as a scan leaves it: absent, open, or not open.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum State {
        Absent,
        Open,
        Closed,
    }

    proptest! {
        /// Netting a run agrees with comparing the issue's state before and after it, for any
        /// run of changes a lifecycle can produce.
        #[test]
        fn netting_agrees_with_the_states_at_both_ends(steps in proptest::collection::vec(0u8..3, 0..12)) {
            let mut state = State::Absent;
            let mut records = Vec::new();
            for step in steps {
                let change = match (state, step) {
                    (State::Absent, 0) => Some(IssueChange::Opened),
                    (State::Open, 1) => Some(IssueChange::Resolved),
                    (State::Closed, 2) => Some(IssueChange::Reopened),
                    _ => None,
                };
                if let Some(change) = change {
                    state = if change == IssueChange::Resolved { State::Closed } else { State::Open };
                    records.push(record(7, change));
                }
            }
            // Any suffix of the run starts from the state its first record implies.
            for start in 0..records.len() {
                let run = &records[start..];
                let before = match run[0].change {
                    IssueChange::Opened => State::Absent,
                    IssueChange::Resolved => State::Open,
                    IssueChange::Reopened => State::Closed,
                };
                let expected = match (before, state) {
                    (State::Absent, State::Open) => Some(IssueChange::Opened),
                    (State::Closed, State::Open) => Some(IssueChange::Reopened),
                    (State::Open, State::Closed) => Some(IssueChange::Resolved),
                    _ => None,
                };
                let net = net_changes(run).first().map(|(_, _, change)| *change);
                prop_assert_eq!(net, expected);
            }
        }
    }
}
