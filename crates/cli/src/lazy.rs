//! Subcommands whose arguments clap builds only when the command line enters them.
//!
//! Why: the derive builds every subcommand's arguments — and copies the global options
//! into each of them — before it parses anything. For `cleanroom exec -- true` that was
//! ~0.8 ms of the process's start (uprobes from `main` to the end of `Cli::parse`), more
//! than anything else the CLI does before it connects. [`Lazy`] hands clap a deferred
//! builder ([`clap::Command::defer`]) instead: `--help` still lists every subcommand with
//! its description, and a subcommand's own arguments are built when it is parsed or its
//! help is shown.

use clap::{ArgMatches, Args, Command, Error, FromArgMatches, Subcommand};

/// `T`'s arguments (an [`Args`] struct) or subcommands (a [`Subcommand`] enum), built
/// only when clap enters the subcommand that holds them.
#[derive(Debug)]
pub struct Lazy<T>(pub T);

impl<T> std::ops::Deref for Lazy<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Lazy<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, Error> {
        T::from_arg_matches(matches).map(Lazy)
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, Error> {
        T::from_arg_matches_mut(matches).map(Lazy)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

/// Run `augment` on `cmd` the way the derive would have before the subcommand's own
/// texts were set: those (from the subcommand's doc comment) win over any the arguments'
/// structs bring (a flattened struct's doc comment would otherwise become its about).
fn keeping_texts(cmd: Command, augment: fn(Command) -> Command) -> Command {
    let about = cmd.get_about().cloned();
    let long_about = cmd.get_long_about().cloned();
    let after = cmd.get_after_help().cloned();
    let after_long = cmd.get_after_long_help().cloned();
    let mut cmd = augment(cmd);
    if let Some(text) = about {
        cmd = cmd.about(text);
    }
    // The derive resets the long about of a subcommand whose doc comment is one line.
    cmd = match long_about {
        Some(text) => cmd.long_about(text),
        None => cmd.long_about(None::<&str>),
    };
    if let Some(text) = after {
        cmd = cmd.after_help(text);
    }
    if let Some(text) = after_long {
        cmd = cmd.after_long_help(text);
    }
    cmd
}

fn args<T: Args>(cmd: Command) -> Command {
    keeping_texts(cmd, T::augment_args)
}

fn args_for_update<T: Args>(cmd: Command) -> Command {
    keeping_texts(cmd, T::augment_args_for_update)
}

fn subcommands<T: Subcommand>(cmd: Command) -> Command {
    keeping_texts(cmd, T::augment_subcommands)
}

fn subcommands_for_update<T: Subcommand>(cmd: Command) -> Command {
    keeping_texts(cmd, T::augment_subcommands_for_update)
}

impl<T: Args> Args for Lazy<T> {
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }

    fn augment_args(cmd: Command) -> Command {
        cmd.defer(args::<T>)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        cmd.defer(args_for_update::<T>)
    }
}

impl<T: Subcommand> Subcommand for Lazy<T> {
    fn augment_subcommands(cmd: Command) -> Command {
        cmd.defer(subcommands::<T>)
    }

    fn augment_subcommands_for_update(cmd: Command) -> Command {
        cmd.defer(subcommands_for_update::<T>)
    }

    fn has_subcommand(name: &str) -> bool {
        T::has_subcommand(name)
    }
}

#[cfg(test)]
mod tests {
    use super::Lazy;
    use clap::{Args, CommandFactory, Parser, Subcommand};

    /// Flattened into [`RunArgs`]: its doc comment must not become `run`'s about.
    #[derive(Debug, Args)]
    struct Extra {
        /// A flag from a flattened struct
        #[arg(long)]
        extra: bool,
    }

    /// The arguments' own doc comment.
    ///
    /// With a second paragraph, which a derive would make the long about.
    #[derive(Debug, Args)]
    struct RunArgs {
        /// What to run
        #[arg(required = true)]
        command: Vec<String>,
        #[command(flatten)]
        extra: Extra,
    }

    #[derive(Debug, Subcommand)]
    enum Group {
        /// List things
        Ls {
            #[arg(long)]
            json: bool,
        },
    }

    #[derive(Debug, Subcommand)]
    enum Eager {
        /// Run a command
        Run(RunArgs),
        /// A group of things
        #[command(subcommand)]
        Group(Group),
    }

    #[derive(Debug, Subcommand)]
    enum Deferred {
        /// Run a command
        Run(Lazy<RunArgs>),
        /// A group of things
        #[command(subcommand)]
        Group(Lazy<Group>),
    }

    #[derive(Debug, Parser)]
    #[command(name = "t", version)]
    struct EagerCli {
        #[arg(long, global = true)]
        host: Option<String>,
        #[command(subcommand)]
        command: Eager,
    }

    #[derive(Debug, Parser)]
    #[command(name = "t", version)]
    struct DeferredCli {
        #[arg(long, global = true)]
        host: Option<String>,
        #[command(subcommand)]
        command: Deferred,
    }

    fn help<C: CommandFactory>(path: &[&str], long: bool) -> String {
        let mut cmd = C::command();
        cmd.build();
        let mut cmd = &mut cmd;
        for name in path {
            cmd = cmd.find_subcommand_mut(name).unwrap();
            cmd.build();
        }
        let text = if long {
            cmd.render_long_help()
        } else {
            cmd.render_help()
        };
        text.to_string()
    }

    #[test]
    fn deferred_subcommands_read_and_print_exactly_as_eager_ones() {
        for path in [&[][..], &["run"], &["group"], &["group", "ls"]] {
            for long in [false, true] {
                assert_eq!(
                    help::<DeferredCli>(path, long),
                    help::<EagerCli>(path, long),
                    "{path:?} long={long}"
                );
            }
        }
        let d =
            DeferredCli::try_parse_from(["t", "run", "--extra", "--host", "h", "--", "x"]).unwrap();
        match d.command {
            Deferred::Run(a) => {
                assert_eq!(
                    (a.command.as_slice(), a.extra.extra),
                    (&["x".to_string()][..], true)
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(d.host.as_deref(), Some("h"));
        let d = DeferredCli::try_parse_from(["t", "group", "ls", "--json"]).unwrap();
        assert!(matches!(
            d.command,
            Deferred::Group(Lazy(Group::Ls { json: true }))
        ));
        // Errors name the same things.
        let e = |r: Result<DeferredCli, clap::Error>| r.unwrap_err().to_string();
        let g = |r: Result<EagerCli, clap::Error>| r.unwrap_err().to_string();
        assert_eq!(
            e(DeferredCli::try_parse_from(["t", "run"])),
            g(EagerCli::try_parse_from(["t", "run"]))
        );
        assert_eq!(
            e(DeferredCli::try_parse_from(["t", "run", "--nope", "x"])),
            g(EagerCli::try_parse_from(["t", "run", "--nope", "x"]))
        );
    }

    /// The real command line still passes clap's own consistency checks once built.
    #[test]
    fn the_cli_is_consistent_when_every_subcommand_is_built() {
        crate::cli::Cli::command().debug_assert();
    }
}
