//! Where the CLI's words go: lines for people, one JSON object per line for machines, and on
//! a terminal a status line that is redrawn under the lines.

use std::io::Write;

use serde_json::Value;

use crate::progress::Update;
use crate::view::{json_line, lines, Output};

pub struct Printer {
    pub output: Output,
    /// Every reason of a check's verdict, not one short one.
    pub verbose: bool,
    /// A status line is on screen and must be cleared before the next line.
    status_shown: bool,
    /// Lines kept instead of written (`buffered`), for work done concurrently and said in order.
    kept: Option<Vec<String>>,
}

impl Printer {
    pub fn new(output: Output) -> Self {
        Printer {
            output,
            verbose: false,
            status_shown: false,
            kept: None,
        }
    }

    /// A printer that keeps its lines until `write_into` another: what runs concurrently is
    /// said in order, not interleaved.
    pub fn buffered(output: Output) -> Self {
        Printer {
            kept: Some(Vec::new()),
            ..Printer::new(output)
        }
    }

    /// Writes the lines this (buffered) printer kept into `printer`.
    pub fn write_into(self, printer: &mut Printer) {
        for line in self.kept.unwrap_or_default() {
            printer.write(&line);
        }
    }

    fn write(&mut self, line: &str) {
        if let Some(kept) = &mut self.kept {
            kept.push(line.to_owned());
            return;
        }
        let mut out = std::io::stdout().lock();
        if self.status_shown {
            // Carriage return and erase the line: the status line gives way.
            let _ = write!(out, "\r\x1b[2K");
            self.status_shown = false;
        }
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    /// `text` for people, `json` for machines.
    pub fn say(&mut self, text: &str, json: Value) {
        match self.output {
            Output::Json => self.write(&json.to_string()),
            Output::Plain | Output::Terminal => self.write(text),
        }
    }

    /// Only for people.
    pub fn text(&mut self, text: &str) {
        if self.output != Output::Json {
            self.write(text);
        }
    }

    /// Only for machines.
    pub fn json(&mut self, json: Value) {
        if self.output == Output::Json {
            self.write(&json.to_string());
        }
    }

    pub fn update(&mut self, update: &Update) {
        match self.output {
            Output::Json => self.write(&json_line(update)),
            output => {
                for line in lines(update, output, self.verbose) {
                    self.write(&line);
                }
            }
        }
    }

    /// Redraws the status line (on a terminal only).
    pub fn status(&mut self, line: &str) {
        if self.output != Output::Terminal {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "\r\x1b[2K{line}");
        let _ = out.flush();
        self.status_shown = true;
    }

    /// Leaves the status line behind before the program ends.
    pub fn finish(&mut self) {
        if self.status_shown {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r\x1b[2K");
            let _ = out.flush();
            self.status_shown = false;
        }
    }
}
