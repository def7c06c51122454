//! The examples' command-line flags: `--name value`, `--name=value`, switches and `--help`, read
//! once at start-up. Small on purpose, so that building an example builds no argument parser.

use std::fmt::Display;
use std::str::FromStr;

/// Flags read from the process's arguments. Each `value`, `option`, `switch` or `list` call takes
/// its flag out of the arguments and records its help line; [`Flags::finish`] then prints the help
/// and exits on `--help`, and reports anything left over or malformed (exit status 2).
pub struct Flags {
    about: &'static str,
    args: Vec<String>,
    help: Vec<(String, String)>,
    errors: Vec<String>,
}

impl Flags {
    /// The process's arguments, for a program described by `about`.
    pub fn from_env(about: &'static str) -> Self {
        Flags { about, args: std::env::args().skip(1).collect(), help: Vec::new(), errors: Vec::new() }
    }

    /// `--name <value>`, or `default` when absent.
    pub fn value<T: FromStr + Display>(&mut self, name: &str, default: T, help: &str) -> T {
        self.help.push((format!("--{name} <VALUE>"), format!("{help} [default: {default}]")));
        self.parsed(name).unwrap_or(default)
    }

    /// `--name <value>`, or `None` when absent.
    pub fn option<T: FromStr>(&mut self, name: &str, help: &str) -> Option<T> {
        self.help.push((format!("--{name} <VALUE>"), help.to_owned()));
        self.parsed(name)
    }

    /// `--name a,b,c`, or `default` (comma-separated too) when absent.
    pub fn list<T: FromStr>(&mut self, name: &str, default: &str, help: &str) -> Vec<T> {
        self.help.push((format!("--{name} <A,B,..>"), format!("{help} [default: {default}]")));
        let text = self.take_value(name).unwrap_or_else(|| default.to_owned());
        let items: Result<Vec<T>, _> = text.split(',').map(|item| item.trim().parse::<T>()).collect();
        items.unwrap_or_else(|_| {
            self.errors.push(format!("invalid value '{text}' for --{name}"));
            Vec::new()
        })
    }

    /// `--name`, a switch without a value.
    pub fn switch(&mut self, name: &str, help: &str) -> bool {
        self.help.push((format!("--{name}"), help.to_owned()));
        let flag = format!("--{name}");
        match self.args.iter().position(|arg| *arg == flag) {
            Some(at) => {
                self.args.remove(at);
                true
            }
            None => false,
        }
    }

    /// Records `message` as an error unless `ok`: a value out of its range (reported by
    /// [`finish`](Flags::finish) with the malformed flags).
    pub fn require(&mut self, ok: bool, message: &str) {
        if !ok {
            self.errors.push(message.to_owned());
        }
    }

    /// Prints the help and exits on `--help` or `-h`; exits with status 2 on an unknown, repeated
    /// or malformed flag.
    pub fn finish(mut self) {
        if self.args.iter().any(|arg| arg == "--help" || arg == "-h") {
            let program = std::env::args().next().unwrap_or_default();
            let program = program.rsplit('/').next().unwrap_or("example");
            println!("{}\n\nUsage: {program} [OPTIONS]\n\nOptions:", self.about);
            self.help.push(("-h, --help".to_owned(), "Print help".to_owned()));
            let width = self.help.iter().map(|(flag, _)| flag.len()).max().unwrap_or(0);
            for (flag, text) in &self.help {
                println!("  {flag:width$}  {text}");
            }
            std::process::exit(0);
        }
        self.errors.extend(self.args.iter().map(|arg| format!("unexpected argument '{arg}'")));
        if !self.errors.is_empty() {
            for error in &self.errors {
                eprintln!("error: {error}");
            }
            eprintln!("\nFor more information, try '--help'.");
            std::process::exit(2);
        }
    }

    /// Takes `--name <value>` or `--name=<value>` out of the arguments.
    fn take_value(&mut self, name: &str) -> Option<String> {
        let flag = format!("--{name}");
        let prefix = format!("--{name}=");
        let at = self.args.iter().position(|arg| *arg == flag || arg.starts_with(&prefix))?;
        let arg = self.args.remove(at);
        if let Some(value) = arg.strip_prefix(&prefix) {
            return Some(value.to_owned());
        }
        if at < self.args.len() {
            Some(self.args.remove(at))
        } else {
            self.errors.push(format!("a value is required for {flag}"));
            None
        }
    }

    fn parsed<T: FromStr>(&mut self, name: &str) -> Option<T> {
        let text = self.take_value(name)?;
        text.parse().map_err(|_| self.errors.push(format!("invalid value '{text}' for --{name}"))).ok()
    }
}
