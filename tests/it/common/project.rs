//! A throwaway project holding one `pyproject.toml`, and the plan crosswheel's options make
//! of it: what the options tests resolve.

use std::collections::BTreeMap;
use std::path::Path;

use crosswheel::input::options::{CliOverrides, OptionsError, Plan, resolve};

pub struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    pub fn with_pyproject(pyproject: &str) -> Project {
        let dir = tempfile::tempdir().expect("create a temporary project folder");
        std::fs::write(dir.path().join("pyproject.toml"), pyproject).expect("write pyproject.toml");
        Project { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The options of `cli` and the variables `env` over the pyproject; the process's own
    /// variables play no part.
    pub fn resolve(&self, cli: &CliOverrides, env: &[(&str, &str)]) -> Result<Plan, OptionsError> {
        let env: BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(self.path(), cli, &env)
    }

    /// The plan without flags; panics when the options do not resolve.
    pub fn plan(&self, env: &[(&str, &str)]) -> Plan {
        self.plan_with(&CliOverrides::default(), env)
    }

    pub fn plan_with(&self, cli: &CliOverrides, env: &[(&str, &str)]) -> Plan {
        self.resolve(cli, env)
            .unwrap_or_else(|err| panic!("resolving the options failed: {err}"))
    }

    /// The error of resolving without flags; panics when the options resolve.
    pub fn error(&self, env: &[(&str, &str)]) -> OptionsError {
        self.error_with(&CliOverrides::default(), env)
    }

    pub fn error_with(&self, cli: &CliOverrides, env: &[(&str, &str)]) -> OptionsError {
        match self.resolve(cli, env) {
            Ok(plan) => panic!(
                "expected an error, got builds {:?}",
                plan.identifiers().collect::<Vec<_>>()
            ),
            Err(err) => err,
        }
    }
}
