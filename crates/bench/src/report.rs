//! What a scenario reports: rows of named figures and one summary object.
//!
//! The contract (see the workspace README): by default a human-readable table; with `--json`
//! one JSON object per line, the last line being the summary `{"scenario": "<name>", ...}`
//! carrying the fields the scenario's issue names, under exactly those names.

use std::fmt::Write as _;

/// One figure in a row or in the summary.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An integer count.
    Int(i64),
    /// A measured or derived quantity; non-finite values are written as JSON `null`.
    Num(f64),
    /// A label, such as a variant name or "did not finish".
    Str(String),
    /// A yes/no figure.
    Bool(bool),
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::from(v as u64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Num(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl Value {
    fn json(&self, out: &mut String) {
        match self {
            Value::Int(v) => write!(out, "{v}").unwrap(),
            Value::Num(v) if v.is_finite() => write!(out, "{v}").unwrap(),
            Value::Num(_) => out.push_str("null"),
            Value::Bool(v) => write!(out, "{v}").unwrap(),
            Value::Str(s) => json_string(s, out),
        }
    }

    fn human(&self) -> String {
        match self {
            Value::Int(v) => v.to_string(),
            Value::Num(v) if v.abs() >= 1000.0 => format!("{v:.0}"),
            Value::Num(v) => format!("{v:.3}"),
            Value::Bool(v) => v.to_string(),
            Value::Str(s) => s.clone(),
        }
    }
}

fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// An ordered set of named figures: one table row, or the summary.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row(Vec<(String, Value)>);

impl Row {
    /// An empty row.
    pub fn new() -> Self {
        Row::default()
    }

    /// Appends a figure; builder style.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.push((key.to_owned(), value.into()));
        self
    }

    /// Its figures, in order.
    pub fn fields(&self) -> &[(String, Value)] {
        &self.0
    }

    /// The row as one JSON object.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{");
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            json_string(k, &mut out);
            out.push_str(": ");
            v.json(&mut out);
        }
        out.push('}');
        out
    }
}

/// Everything a scenario run produced.
#[derive(Debug)]
pub struct Report {
    scenario: &'static str,
    rows: Vec<Row>,
    summary: Row,
}

impl Report {
    /// A report for `scenario` with no rows yet.
    pub fn new(scenario: &'static str) -> Self {
        Report { scenario, rows: Vec::new(), summary: Row::new() }
    }

    /// Adds a table row.
    pub fn row(&mut self, row: Row) {
        self.rows.push(row);
    }

    /// Sets the summary figures (the `"scenario"` field is added when printing).
    pub fn summary(&mut self, summary: Row) {
        self.summary = summary;
    }

    /// The output lines: JSON objects, or a table followed by the summary.
    pub fn render(&self, json: bool) -> Vec<String> {
        let summary = Row::new().with("scenario", self.scenario);
        let mut summary = summary;
        summary.0.extend(self.summary.0.iter().cloned());
        if json {
            let mut lines: Vec<String> = self.rows.iter().map(Row::to_json).collect();
            lines.push(summary.to_json());
            return lines;
        }
        let mut lines = vec![format!("== {} ==", self.scenario)];
        lines.extend(table(&self.rows));
        lines.push("summary:".to_owned());
        lines.extend(summary.0.iter().map(|(k, v)| format!("  {k:<28} {}", v.human())));
        lines
    }
}

/// Lays rows out in columns; a new header is printed whenever the set of keys changes.
fn table(rows: &[Row]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut i = 0;
    while i < rows.len() {
        let keys: Vec<&str> = rows[i].0.iter().map(|(k, _)| k.as_str()).collect();
        let same = rows[i..]
            .iter()
            .take_while(|r| r.0.iter().map(|(k, _)| k.as_str()).eq(keys.iter().copied()))
            .count();
        let block = &rows[i..i + same];
        let cells: Vec<Vec<String>> =
            block.iter().map(|r| r.0.iter().map(|(_, v)| v.human()).collect()).collect();
        let widths: Vec<usize> = keys
            .iter()
            .enumerate()
            .map(|(c, k)| cells.iter().map(|r| r[c].len()).chain([k.len()]).max().unwrap_or(0))
            .collect();
        let fmt = |items: Vec<&str>| {
            items
                .iter()
                .zip(&widths)
                .map(|(s, w)| format!("{s:>w$}"))
                .collect::<Vec<_>>()
                .join("  ")
        };
        lines.push(fmt(keys.clone()));
        for r in &cells {
            lines.push(fmt(r.iter().map(String::as_str).collect()));
        }
        i += same;
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_and_orders_fields() {
        let row = Row::new().with("a", 1u64).with("b\"", "x\ny").with("c", f64::NAN);
        assert_eq!(row.to_json(), r#"{"a": 1, "b\"": "x\ny", "c": null}"#);
    }

    #[test]
    fn summary_is_last_and_named() {
        let mut r = Report::new("demo");
        r.row(Row::new().with("variant", "x").with("ns", 2.5));
        r.summary(Row::new().with("ratio", 1.25));
        let lines = r.render(true);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1], r#"{"scenario": "demo", "ratio": 1.25}"#);
        let human = r.render(false);
        assert!(human.iter().any(|l| l.contains("variant")));
        assert!(human.last().unwrap().contains("1.250"));
    }
}
