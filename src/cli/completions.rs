//! `completions` and the hidden `man`: generated from the clap definitions.

use super::common::stdout_write;
use super::{Cli, Shell};
use crate::error::{Exit, Result};
use clap::CommandFactory;

pub(super) fn completions(shell: Shell) -> Result<Exit> {
    let mut cmd = Cli::command();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "rivumi-compact", &mut buf);
    stdout_write(|w| w.write_all(&buf))
}

pub(super) fn man() -> Result<Exit> {
    let page = super::manpage::render();
    stdout_write(|w| w.write_all(&page))
}
