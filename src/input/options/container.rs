//! `/project` in Linux options. cibuildwheel builds Linux wheels in a container that
//! mounts the project at `/project`, and real configurations name it so (numpy:
//! `PKG_CONFIG_PATH="/project/.openblas"`); crosswheel builds the project folder itself,
//! so there a `/project` path names that folder.

use super::{EnvAssignment, EnvPart};

/// Where cibuildwheel's Linux container mounts the project.
const CONTAINER_PROJECT: &str = "/project";

/// What may stand right before a path in shell text and option values: `A=/project`,
/// `PATH=$PATH:/project/bin`, `"/project"`, `$(cat /project/x)`.
const BEFORE: &str = "=:\"'(,;`|&<>";
/// What may end the `/project` part of a path.
const AFTER: &str = "/:\"'),;`|&<>";

/// `text` with every `/project` path replaced by `project`: `/project` where it starts a
/// path (at the start of `text` when `at_start`, after white space or one of [`BEFORE`])
/// and ends there or goes on with `/` (`/projects`, `/srv/project` are other paths).
pub(super) fn project_paths(text: &str, project: &str, at_start: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    for (start, _) in text.match_indices(CONTAINER_PROJECT) {
        if start < done {
            continue;
        }
        let end = start + CONTAINER_PROJECT.len();
        let starts_path = text[..start]
            .chars()
            .next_back()
            .map_or(at_start, |c| c.is_whitespace() || BEFORE.contains(c));
        let ends_name = text[end..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace() || AFTER.contains(c));
        if starts_path && ends_name {
            out.push_str(&text[done..start]);
            out.push_str(project);
            done = end;
        }
    }
    out.push_str(&text[done..]);
    out
}

/// The `environment` assignments with `/project` paths naming `project`: in literal
/// text (a value that starts with one, or one after a separator) and in `$(...)`
/// commands, where `quoted` (the shell-quoted folder) takes its place.
pub(super) fn environment(
    assignments: Vec<EnvAssignment>,
    project: &str,
    quoted: &str,
) -> Vec<EnvAssignment> {
    assignments
        .into_iter()
        .map(|assignment| EnvAssignment {
            name: assignment.name,
            value: assignment
                .value
                .into_iter()
                .enumerate()
                .map(|(index, part)| match part {
                    // `$HOME/project` is no container path: only the value's first part
                    // starts at the start of a path.
                    EnvPart::Literal(text) => {
                        EnvPart::Literal(project_paths(&text, project, index == 0))
                    }
                    EnvPart::Command(text) => EnvPart::Command(project_paths(&text, quoted, true)),
                    variable @ EnvPart::Variable(_) => variable,
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_paths_name_the_project_folder() {
        let fill = |text| project_paths(text, "/w/demo", true);
        assert_eq!(fill("/project/.openblas"), "/w/demo/.openblas");
        assert_eq!(fill("/project"), "/w/demo");
        assert_eq!(
            fill("bash /project/tools/x.sh /project"),
            "bash /w/demo/tools/x.sh /w/demo"
        );
        assert_eq!(
            fill("-Dpc=/project/a:/project/b"),
            "-Dpc=/w/demo/a:/w/demo/b"
        );
        assert_eq!(fill("cat \"/project/x\"; ls"), "cat \"/w/demo/x\"; ls");
    }

    #[test]
    fn other_paths_that_contain_project_stay() {
        let fill = |text| project_paths(text, "/w/demo", true);
        for text in [
            "/projects/x",
            "/srv/project/x",
            "~/project",
            "/project-x",
            "a/project",
        ] {
            assert_eq!(fill(text), text);
        }
        assert_eq!(project_paths("/project/x", "/w/demo", false), "/project/x");
    }

    #[test]
    fn environment_values_and_commands_name_the_project_folder() {
        let assignments = vec![
            EnvAssignment {
                name: "PKG_CONFIG_PATH".into(),
                value: vec![EnvPart::Literal("/project/.openblas".into())],
            },
            EnvAssignment {
                name: "P".into(),
                value: vec![
                    EnvPart::Variable("HOME".into()),
                    EnvPart::Literal("/project:/project/bin".into()),
                    EnvPart::Command("cat /project/v".into()),
                ],
            },
        ];
        let filled = environment(assignments, "/w/my demo", "'/w/my demo'");
        assert_eq!(
            filled[0].value,
            [EnvPart::Literal("/w/my demo/.openblas".into())]
        );
        assert_eq!(
            filled[1].value,
            [
                EnvPart::Variable("HOME".into()),
                EnvPart::Literal("/project:/w/my demo/bin".into()),
                EnvPart::Command("cat '/w/my demo'/v".into()),
            ]
        );
    }
}
