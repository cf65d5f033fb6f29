//! `tools/skill`: loads one skill, the whole `SKILL.md` of a manual for one kind of task.
//!
//! ChengOS's agent-tools reference describes the tool in prose; the ports come from its
//! sentences:
//!
//! | port | from |
//! |---|---|
//! | `skill_dirs` (author) | "the directories are given by the host (`{:skills {:dirs [...]}}`; no location such as .claude/skills is written into the library), in the given order, the first of a name wins" |
//! | `name` (agent) | "the description lists only the catalogue (name + one-line description); when the model finds a match it calls skill to load the whole manual into the conversation" |
//! | `content` | "to load the whole manual into the conversation" |
//! | `description` | "each subdirectory holds a SKILL.md (frontmatter name / description; without a name, the directory's name)" |
//!
//! The description a model reads lists the catalogue, scanned once when the toolkit is built
//! ([`Node::description_for`]): a stable description keeps the model's prompt cache. A call
//! scans again, so a skill added since is found. Read-only.

use crate::skills::{Catalogue, MAX_SKILLS};
use cheng_node::input::{self, non_empty_str};
use cheng_node::{
    failure, Audience, Effects, ErrorKind, Node, NodeError, NodeSpec, PortSpec, PortType,
    RunContext, Values,
};
use serde_json::json;

pub const ID: &str = "tools/skill";

/// What a model reads before the catalogue.
const DESCRIPTION: &str = "Load a skill: the whole manual (SKILL.md) for one kind of task. The skills are listed below by name with what each is for; when a task matches one, call this with its name before starting the task and follow the manual. Read-only.";

pub static SPEC: NodeSpec = NodeSpec {
    id: ID,
    title: "Skill",
    description: DESCRIPTION,
    category: "memory",
    inputs: &[
        PortSpec::input(
            "name",
            PortType::String,
            "The skill to load, as the list in this tool's description names it",
        )
        .required(),
        PortSpec::input(
            "skill_dirs",
            PortType::Array(&PortType::String),
            "Skill directories, in order (absolute paths, or ~/…): each subdirectory holding a SKILL.md is a skill (frontmatter name, else the directory's name, and description); the first directory wins on a name clash",
        )
        .required()
        .audience(Audience::Author),
    ],
    outputs: &[
        PortSpec::output("name", PortType::String, "The skill's name"),
        PortSpec::output("description", PortType::String, "The skill's one-line description"),
        PortSpec::output("path", PortType::String, "The SKILL.md read (absolute path)"),
        PortSpec::output("content", PortType::String, "The whole SKILL.md, frontmatter included"),
        PortSpec::output("summary", PortType::String, "Human-readable summary"),
        PortSpec::output(
            "warnings",
            PortType::Array(&PortType::String),
            "Skills skipped while scanning and why (symlinks, oversized or unreadable files, names already taken)",
        ),
        failure::success("Whether the skill was found and read"),
        failure::ERROR_KIND,
        failure::TERMINAL,
        failure::ERROR,
    ],
    gate: None,
    effects: Effects::ReadOnly,
};

pub struct Skill;

cheng_node::inventory::submit! { cheng_node::NodeRegistration::new(&Skill) }

#[cheng_node::async_trait]
impl Node for Skill {
    fn spec(&self) -> &'static NodeSpec {
        &SPEC
    }

    fn description_for(&self, config: &Values) -> String {
        // Unconfigured (a node listing): the node's own description, no catalogue.
        if !config.contains_key("skill_dirs") {
            return DESCRIPTION.to_string();
        }
        let dirs = input::string_list(config, "skill_dirs").unwrap_or_default();
        describe(&Catalogue::scan(&dirs))
    }

    async fn run(&self, _ctx: &RunContext, input: Values) -> Result<Values, NodeError> {
        let name = non_empty_str(&input, "name")
            .ok_or_else(|| NodeError::invalid_input("name is required: the skill to load"))?
            .to_string();
        let dirs = input::string_list(&input, "skill_dirs")?;
        let catalogue = tokio::task::spawn_blocking(move || Catalogue::scan(&dirs))
            .await
            .map_err(|e| {
                NodeError::internal(format!("the skill scan stopped unexpectedly: {e}"))
            })?;
        load(&catalogue, &name)
    }
}

/// The outputs for skill `name`, or what exists when there is none.
pub fn load(catalogue: &Catalogue, name: &str) -> Result<Values, NodeError> {
    let Some(skill) = catalogue.find(name) else {
        let shown = cheng_node::display::line(name);
        let message = if catalogue.skills.is_empty() {
            format!(
                "no skill named `{}`: no skills are installed (the toolkit's author lists skill directories in skill_dirs)",
                shown.as_str()
            )
        } else {
            format!(
                "no skill named `{}`; the skills are: {}",
                shown.as_str(),
                catalogue.names()
            )
        };
        return Err(NodeError::new(ErrorKind::NotFound, message));
    };
    let mut out = Values::new();
    out.insert("name".into(), json!(skill.name));
    out.insert("description".into(), json!(skill.description));
    out.insert("path".into(), json!(skill.path.display().to_string()));
    out.insert("content".into(), json!(skill.content));
    out.insert(
        "summary".into(),
        json!(format!(
            "skill {} ({} bytes)",
            skill.name,
            skill.content.len()
        )),
    );
    out.insert("warnings".into(), json!(catalogue.problems));
    failure::fill::<()>(&mut out, &Ok(()));
    Ok(out)
}

/// The node's description with the catalogue: one `- name: description` line per skill.
pub fn describe(catalogue: &Catalogue) -> String {
    let mut text = String::from(DESCRIPTION);
    if catalogue.skills.is_empty() {
        text.push_str("\n\nNo skills are installed.");
        return text;
    }
    text.push_str("\n\nSkills:");
    for skill in &catalogue.skills {
        if skill.description.is_empty() {
            text.push_str(&format!("\n- {}", skill.name));
        } else {
            text.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
    }
    if catalogue.skills.len() >= MAX_SKILLS {
        text.push_str(&format!("\n(only the first {MAX_SKILLS} are listed)"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skills::SkillEntry;

    fn entry(name: &str, description: &str) -> SkillEntry {
        SkillEntry {
            name: name.into(),
            description: description.into(),
            path: format!("/s/{name}/SKILL.md").into(),
            content: format!("# {name}"),
        }
    }

    #[test]
    fn the_description_lists_the_catalogue() {
        let catalogue = Catalogue {
            skills: vec![entry("deploy", "Ship a release"), entry("bare", "")],
            problems: Vec::new(),
        };
        let text = describe(&catalogue);
        assert!(text.starts_with(DESCRIPTION));
        assert!(
            text.ends_with("Skills:\n- deploy: Ship a release\n- bare"),
            "{text}"
        );
        assert!(describe(&Catalogue::default()).ends_with("No skills are installed."));
    }

    #[test]
    fn a_missing_name_lists_what_exists() {
        let catalogue = Catalogue {
            skills: vec![entry("deploy", "x"), entry("review", "y")],
            problems: Vec::new(),
        };
        let err = load(&catalogue, "deplyo").unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotFound);
        assert!(
            err.message.ends_with("the skills are: deploy, review"),
            "{}",
            err.message
        );
        let err = load(&Catalogue::default(), "x\u{1b}[2J").unwrap_err();
        assert!(err.message.contains("no skills are installed"));
        assert!(!err.message.contains('\u{1b}'));
        let out = load(&catalogue, "review").unwrap();
        assert_eq!(out["content"], "# review");
        assert_eq!(out["success"], true);
    }

    #[test]
    fn the_spec_is_sound() {
        assert!(SPEC.problems().is_empty(), "{:?}", SPEC.problems());
    }
}
