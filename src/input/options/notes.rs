//! `Plan::notes`, gathered while the plan is resolved: the table read, the `CIBW_*`
//! variables used, and what is ignored or not built.

use super::sources::EnvVarsUsed;

/// The lines crosswheel says once per run about how it read the configuration.
#[derive(Debug, Default)]
pub(super) struct Notes {
    pub(super) lines: Vec<String>,
}

impl Notes {
    pub(super) fn push(&mut self, line: String) {
        if !self.lines.contains(&line) {
            self.lines.push(line);
        }
    }

    pub(super) fn ignored(&mut self, names: &[String]) {
        if !names.is_empty() {
            self.push(format!(
                "ignored (does not apply to cross builds): {}",
                names.join(", ")
            ));
        }
    }

    pub(super) fn env_vars(&mut self, used: &EnvVarsUsed) {
        if !used.cibw.is_empty() {
            self.push(format!(
                "using cibuildwheel variables: {}",
                used.cibw.join(", ")
            ));
        }
        if !used.shadowed.is_empty() {
            self.push(format!(
                "not using {} (the CROSSWHEEL_* variable of the same option is set)",
                used.shadowed.join(", ")
            ));
        }
    }
}
