//! CSV exports (beyond the spec): the issue list as RFC 4180 CSV, read from the store a page
//! at a time while the body is sent, so an export of any size holds one page in memory.
//!
//! Every cell is safe to open in a spreadsheet: a cell that starts with `=`, `+`, `-`, `@`, a
//! tab or a carriage return (what spreadsheets read as a formula) gets a leading `'`, and is
//! quoted (OWASP's advice on CSV injection).

use std::sync::Arc;

use crate::ids::PropertyId;
use crate::model::Issue;
use crate::store::{After, IssueFilter, PageRequest, Store, StoreResult};
use crate::time::Timestamp;

/// Issues read from the store per chunk of the body.
pub const CSV_BATCH: usize = 500;

/// The header row of the issue export: the issue's fields, named as the JSON list names them.
pub const ISSUE_CSV_COLUMNS: [&str; 14] = [
    "id",
    "type",
    "title",
    "severity",
    "scanKind",
    "status",
    "url",
    "evidence",
    "howToFix",
    "createdAt",
    "lastSeenAt",
    "resolvedAt",
    "fixedAt",
    "jobId",
];

/// The issue export of one property and filter: call [`IssueCsv::next_chunk`] until it
/// gives `None`. The first chunk is the header row; each later one holds up to
/// [`CSV_BATCH`] issues, newest first (the list's order).
#[derive(Debug)]
pub struct IssueCsv {
    store: Arc<dyn Store>,
    property_id: PropertyId,
    filter: IssueFilter,
    after: Option<After>,
    header_sent: bool,
    done: bool,
}

impl IssueCsv {
    /// The media type of the body.
    pub const CONTENT_TYPE: &'static str = "text/csv; charset=utf-8";

    /// The export of `property_id`'s issues that pass `filter`.
    pub fn new(store: Arc<dyn Store>, property_id: PropertyId, filter: IssueFilter) -> Self {
        IssueCsv {
            store,
            property_id,
            filter,
            after: None,
            header_sent: false,
            done: false,
        }
    }

    /// The file name to offer: `issues-<propertyId>.csv`.
    pub fn file_name(&self) -> String {
        format!("issues-{}.csv", self.property_id)
    }

    /// The next part of the body; `None` once everything was given.
    pub async fn next_chunk(&mut self) -> StoreResult<Option<Vec<u8>>> {
        if !self.header_sent {
            self.header_sent = true;
            let mut out = String::new();
            push_row(&mut out, ISSUE_CSV_COLUMNS);
            return Ok(Some(out.into_bytes()));
        }
        if self.done {
            return Ok(None);
        }
        let page = PageRequest {
            limit: CSV_BATCH,
            after: self.after.take(),
        };
        let issues = self
            .store
            .list_issues(&self.property_id, &self.filter, &page)
            .await?;
        self.done = issues.len() < CSV_BATCH;
        let Some(last) = issues.last() else {
            return Ok(None);
        };
        self.after = Some(After {
            created_at: last.created_at,
            id: last.id.as_str().to_owned(),
        });
        let mut out = String::with_capacity(issues.len() * 256);
        for issue in &issues {
            push_issue(&mut out, issue);
        }
        Ok(Some(out.into_bytes()))
    }
}

/// One issue as a row.
fn push_issue(out: &mut String, issue: &Issue) {
    let time = |at: Option<Timestamp>| at.map(|at| at.to_string()).unwrap_or_default();
    push_row(
        out,
        [
            issue.id.as_str(),
            &issue.issue_type,
            &issue.title,
            issue.severity.as_str(),
            issue.scan_kind.as_str(),
            issue.status.as_str(),
            issue.url.as_deref().unwrap_or(""),
            &issue.evidence,
            &issue.how_to_fix,
            &time(Some(issue.created_at)),
            &time(Some(issue.last_seen_at)),
            &time(issue.resolved_at),
            &time(issue.fixed_at),
            issue.job_id.as_str(),
        ],
    );
}

/// One record: cells separated by commas, ended by CRLF.
pub fn push_row<'a>(out: &mut String, cells: impl IntoIterator<Item = &'a str>) {
    for (index, cell) in cells.into_iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        push_cell(out, cell);
    }
    out.push_str("\r\n");
}

/// One cell: quoted when it holds a comma, a quote or a line break (quotes doubled), and
/// guarded with a leading `'` (and quoted) when a spreadsheet would read it as a formula.
pub fn push_cell(out: &mut String, cell: &str) {
    let formula = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if !formula && !cell.contains([',', '"', '\r', '\n']) {
        out.push_str(cell);
        return;
    }
    out.push('"');
    if formula {
        out.push('\'');
    }
    for ch in cell.chars() {
        if ch == '"' {
            out.push('"');
        }
        out.push(ch);
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An RFC 4180 reader, to read back what [`push_row`] writes.
    fn parse(text: &str) -> Vec<Vec<String>> {
        let mut records = Vec::new();
        let mut record = Vec::new();
        let mut cell = String::new();
        let mut chars = text.chars().peekable();
        let mut quoted = false;
        while let Some(ch) = chars.next() {
            match (quoted, ch) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    chars.next();
                    cell.push('"');
                }
                (true, '"') => quoted = false,
                (true, other) => cell.push(other),
                (false, '"') => quoted = true,
                (false, ',') => record.push(std::mem::take(&mut cell)),
                (false, '\r') if chars.peek() == Some(&'\n') => {
                    chars.next();
                    record.push(std::mem::take(&mut cell));
                    records.push(std::mem::take(&mut record));
                }
                (false, other) => cell.push(other),
            }
        }
        assert!(!quoted && cell.is_empty() && record.is_empty(), "{text:?}");
        records
    }

    #[test]
    fn formulas_are_guarded_and_specials_quoted() {
        let mut out = String::new();
        push_row(
            &mut out,
            [
                "plain",
                "=1+1",
                "-2",
                "@SUM(A1)",
                "a,b",
                "say \"hi\"",
                "two\nlines",
                "",
            ],
        );
        assert_eq!(
            out,
            "plain,\"'=1+1\",\"'-2\",\"'@SUM(A1)\",\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\r\n"
        );
    }

    proptest! {
        /// Any cells come back as written (with the guard before a formula), one record per
        /// row, whatever they hold.
        #[test]
        fn rows_read_back(rows in proptest::collection::vec(proptest::collection::vec(any::<String>(), 1..6), 1..5)) {
            let mut out = String::new();
            for row in &rows {
                push_row(&mut out, row.iter().map(String::as_str));
            }
            let expected: Vec<Vec<String>> = rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|cell| {
                            if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
                                format!("'{cell}")
                            } else {
                                cell.clone()
                            }
                        })
                        .collect()
                })
                .collect();
            prop_assert_eq!(parse(&out), expected);
        }
    }
}
