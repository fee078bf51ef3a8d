//! The command line. `--help` on each command says what it does, what it reads and what it
//! changes: the person reading it may be on call at 3 a.m.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "cluster-canary",
    version,
    about = "Operate cluster-canary rollouts: check a plan, start a rollout, watch it, approve or reject a waiting step, abort it.",
    long_about = "Operate cluster-canary rollouts: check a plan, start a rollout, watch it, approve or reject a \
waiting step, abort it.\n\n\
AWS access uses the SDK's standard chain: AWS_PROFILE or --profile, AWS_REGION or --region, \
AWS_ENDPOINT_URL or --endpoint-url (the local sandbox prints the values to use). The state \
machine is --state-machine, else CLUSTER_CANARY_STATE_MACHINE, else the RolloutStateMachineArn \
output of the SAM stack (--stack, else samconfig.toml's stack_name in this directory, else \
`cluster-canary`).\n\n\
A typical rollout by hand:\n  \
cluster-canary plan validate plan.json     # offline\n  \
cluster-canary plan check plan.json        # against AWS, read-only\n  \
cluster-canary start plan.json --watch     # exit code 0 when promoted\n  \
cluster-canary approve                     # when a step waits for a person\n  \
cluster-canary abort                       # traffic back to the baseline, now",
    after_help = "Exit codes: 0 done (watch/start --watch: promoted), 1 refused or failed (the message says why), 2 usage."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// AWS region (default: the SDK's: AWS_REGION, the profile's region).
    #[arg(long, global = true)]
    pub region: Option<String>,
    /// AWS named profile.
    #[arg(long, global = true)]
    pub profile: Option<String>,
    /// Send every AWS request to this endpoint (an emulator such as the local sandbox).
    #[arg(long, global = true, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// How to print: `text` for people (colour and a live status line on a terminal), `json`
    /// for machines (one object per line).
    #[arg(long, global = true, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Debug, Args, Clone, Default)]
pub struct StateMachineArgs {
    /// The rollout state machine's ARN.
    #[arg(long, env = "CLUSTER_CANARY_STATE_MACHINE", value_name = "ARN")]
    pub state_machine: Option<String>,
    /// The SAM stack whose RolloutStateMachineArn output names the state machine (default:
    /// samconfig.toml's stack_name, else `cluster-canary`).
    #[arg(long, env = "CLUSTER_CANARY_STACK", value_name = "NAME")]
    pub stack: Option<String>,
}

/// The fleet state machine, and the rollout state machine its cells run on.
#[derive(Debug, Args, Clone, Default)]
pub struct FleetMachineArgs {
    /// The fleet state machine's ARN (default: the stack's FleetStateMachineArn output).
    #[arg(long, env = "CLUSTER_CANARY_FLEET_STATE_MACHINE", value_name = "ARN")]
    pub fleet_state_machine: Option<String>,
    /// Where `fleet start` stores a plan too large for the fleet's state (default: the stack's
    /// FleetPlanBucketName output).
    #[arg(long, env = "CLUSTER_CANARY_FLEET_PLAN_BUCKET", value_name = "BUCKET")]
    pub fleet_plan_bucket: Option<String>,
    #[command(flatten)]
    pub rollout: StateMachineArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate or dry-run rollout plans.
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Start a rollout from a plan: validates it first, prints the execution ARN.
    Start {
        /// The plan (JSON; see `cluster-canary plan validate --schema`).
        file: PathBuf,
        /// The execution's name (default: the cluster's name and the time).
        #[arg(long)]
        name: Option<String>,
        /// Go on watching it (exit code 0 only when promoted).
        #[arg(long)]
        watch: bool,
        /// With --watch: every reason a check's verdict carries.
        #[arg(long, requires = "watch")]
        verbose: bool,
        #[command(flatten)]
        state_machine: StateMachineArgs,
    },
    /// Follow a rollout to its end (a finished one is replayed): each step with the weights
    /// read back from AWS, each check's verdict, a waiting approval, the outcome. Exit code 0
    /// when promoted, 1 otherwise.
    Watch {
        /// Execution ARN or name (default: the one running rollout).
        execution: Option<String>,
        /// Every reason a check's verdict carries, not one short reason per check.
        #[arg(long)]
        verbose: bool,
        #[command(flatten)]
        state_machine: StateMachineArgs,
    },
    /// Approve the step a rollout waits for: it sets the step's weights and goes on.
    Approve {
        /// Execution ARN or name (default: the one running rollout).
        execution: Option<String>,
        /// Who approves, recorded in the execution's history (default: $USER).
        #[arg(long)]
        by: Option<String>,
        #[command(flatten)]
        state_machine: StateMachineArgs,
    },
    /// Reject the step a rollout waits for: the rollout restores the baseline and fails.
    Reject {
        /// Execution ARN or name (default: the one running rollout).
        execution: Option<String>,
        /// Why, recorded as the execution's cause (at most 1,000 characters).
        #[arg(long)]
        reason: String,
        /// Who rejects (default: $USER).
        #[arg(long)]
        by: Option<String>,
        #[command(flatten)]
        state_machine: StateMachineArgs,
    },
    /// Write one self-contained HTML page for a rollout's post-mortem: the canary's share of
    /// traffic over time with each step, every check's verdict and reasons, and each compared
    /// metric's canary and baseline series (`analysis.compare`). No network needed to open it.
    Report {
        /// Execution ARN or name (default: the one running rollout).
        execution: Option<String>,
        /// Where to write the page (default: `<execution name>.html` here).
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
        #[command(flatten)]
        state_machine: StateMachineArgs,
    },
    /// Stop a rollout now and wait until the safety net has put the baseline weights back.
    Abort {
        /// Execution ARN or name (default: the one running rollout).
        execution: Option<String>,
        /// Why, recorded as the execution's cause.
        #[arg(long, default_value = "aborted with cluster-canary abort")]
        reason: String,
        /// How long to wait for the safety net before saying how to restore by hand.
        #[arg(long, default_value_t = 300, value_name = "SECONDS")]
        timeout: u64,
        #[command(flatten)]
        state_machine: StateMachineArgs,
    },
    /// Put an ended rollout's targets back at the baseline its Prepare recorded, whatever
    /// they are at now (the way back when the safety net rightly left them alone: a foreign
    /// change, a weight someone put back). Shows the baseline and what is there now, asks
    /// first (or `--yes`), writes, reads back, says what it overwrote.
    ///
    /// Refuses a promoted rollout, and one a newer rollout of the same targets followed
    /// (naming it): its baseline would undo more than it moved. `--force` goes ahead.
    Restore {
        /// Execution ARN or name.
        execution: String,
        /// Do not ask.
        #[arg(long)]
        yes: bool,
        /// Restore even a promoted rollout's baseline, or one a newer rollout followed (still
        /// asks, unless --yes).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        state_machine: StateMachineArgs,
    },
    /// Fleets: many cells (each a rollout) moved in waves with one failure budget and one stop
    /// (docs/fleets.md).
    #[command(subcommand)]
    Fleet(FleetCommand),
    /// The stack's freeze switch: `freeze --reason TEXT` holds every rollout and fleet of the
    /// stack where it is (no next step, no new wave, no first step; checks, rollbacks, aborts
    /// and the safety net go on), `freeze status` says whether it is on. One write to the
    /// stack's SSM parameter; `Rollouts Frozen` says so. Change Calendars freeze the same way
    /// (the stack's ChangeCalendars, a plan's `freeze.calendars`).
    #[command(args_conflicts_with_subcommands = true)]
    Freeze {
        /// Why (at most 256 bytes): every held rollout's checks show it.
        #[arg(long)]
        reason: Option<String>,
        #[command(flatten)]
        switch: FreezeArgs,
        #[command(subcommand)]
        command: Option<FreezeCommand>,
    },
    /// Turn the stack's freeze switch off: held rollouts and fleets go on at their next look
    /// (unless a Change Calendar still holds them). `Rollouts Unfrozen` says so.
    Unfreeze {
        #[command(flatten)]
        switch: FreezeArgs,
    },
    /// Running and recent rollouts: cluster, step, outcome, age.
    List {
        /// How many of the most recent executions to show.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        state_machine: StateMachineArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum FreezeCommand {
    /// Whether the stack's freeze switch is on, why, since when and by whom.
    Status {
        #[command(flatten)]
        switch: FreezeArgs,
    },
}

/// Where the stack's freeze switch is, and who turns it.
#[derive(Debug, Args, Clone, Default)]
pub struct FreezeArgs {
    /// The switch's SSM parameter (default: the stack's FreezeParameterName output).
    #[arg(long, env = "CLUSTER_CANARY_FREEZE_PARAMETER", value_name = "NAME")]
    pub freeze_parameter: Option<String>,
    /// Who turns it, recorded in the switch and its event (default: $USER).
    #[arg(long)]
    pub by: Option<String>,
    #[command(flatten)]
    pub state_machine: StateMachineArgs,
}

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Offline: the validation Prepare makes, every problem with its field path. Exit 1 if
    /// any plan is invalid.
    Validate {
        /// Plans to validate.
        #[arg(required_unless_present = "schema")]
        files: Vec<PathBuf>,
        /// Print the plan's JSON Schema instead.
        #[arg(long)]
        schema: bool,
    },
    /// A dry run against AWS, read-only: everything Prepare and the analysis validation check
    /// (targets exist and forward, TTL against bake, alarms exist, no other rollout on the same
    /// traffic, the cluster, target health), then what each step will set on each target and
    /// the least time the rollout takes. Writes nothing.
    Check {
        /// The plan.
        file: PathBuf,
        #[command(flatten)]
        state_machine: StateMachineArgs,
    },
    /// For Route 53 names whose per-cluster records ExternalDNS writes: create the weighted
    /// alias records cluster-canary owns at each Route 53 target's name (the stable's at weight
    /// 100, the canary's at 0), each an alias of the per-cluster name that cluster's
    /// ExternalDNS manages. Keeps records that are already so; refuses (writing nothing) a name
    /// ExternalDNS owns, a per-cluster name not in the zone yet, a record that aliases
    /// something else. See docs/traffic/route53.md.
    ApexRecords {
        /// The plan.
        file: PathBuf,
        /// SET_IDENTIFIER=NAME: the per-cluster name the set identifier's record aliases, e.g.
        /// `--point blue=blue.app.example.com --point green=green.app.example.com`.
        #[arg(long = "point", value_name = "SET=NAME", required = true)]
        points: Vec<String>,
        /// Show what would be created; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Offline: the validation the fleet's first step makes (every cell's rollout plan with
    /// it), every problem with its path; then each wave's cells. Exit 1 if any is invalid.
    Validate {
        /// Fleet plans to validate.
        #[arg(required_unless_present = "schema")]
        files: Vec<PathBuf>,
        /// Print the fleet plan's JSON Schema instead.
        #[arg(long)]
        schema: bool,
    },
    /// A dry run against AWS, read-only: `plan check` for every cell. Writes nothing.
    Check {
        /// The fleet plan.
        file: PathBuf,
        #[command(flatten)]
        machines: FleetMachineArgs,
    },
    /// Start a fleet from a plan: validates it first, prints the execution ARN.
    Start {
        /// The fleet plan (JSON; see `cluster-canary fleet validate --schema`).
        file: PathBuf,
        /// The execution's name (default: the fleet's name and the time).
        #[arg(long)]
        name: Option<String>,
        /// Go on watching it (exit code 0 only when every wave ran).
        #[arg(long)]
        watch: bool,
        #[command(flatten)]
        machines: FleetMachineArgs,
    },
    /// Follow a fleet to its end as one table of cells (wave, cluster, status, step, outcome),
    /// then its outcome. Exit code 0 when the fleet completed, 1 otherwise.
    Watch {
        /// Fleet execution ARN or name (default: the one running fleet).
        execution: Option<String>,
        #[command(flatten)]
        machines: FleetMachineArgs,
    },
    /// Approve the wave a fleet waits for (approval.beforeWaves): its cells start.
    Approve {
        /// Fleet execution ARN or name (default: the one running fleet).
        execution: Option<String>,
        /// Who approves, recorded in the fleet's history (default: $USER).
        #[arg(long)]
        by: Option<String>,
        #[command(flatten)]
        machines: FleetMachineArgs,
    },
    /// Reject the wave a fleet waits for: the fleet halts before it (no cell of it starts).
    Reject {
        /// Fleet execution ARN or name (default: the one running fleet).
        execution: Option<String>,
        /// Why, recorded as the fleet's cause (at most 1,000 characters).
        #[arg(long)]
        reason: String,
        /// Who rejects (default: $USER).
        #[arg(long)]
        by: Option<String>,
        #[command(flatten)]
        machines: FleetMachineArgs,
    },
    /// Stop a fleet now: no new cell starts, its running cells are stopped, and each one's
    /// safety net puts its baseline back. Promoted cells stay promoted. Waits for the cells.
    Abort {
        /// Fleet execution ARN or name (default: the one running fleet).
        execution: Option<String>,
        /// Why, recorded as the fleet's and each stopped cell's cause.
        #[arg(long, default_value = "aborted with cluster-canary fleet abort")]
        reason: String,
        /// How long to wait for the running cells to end.
        #[arg(long, default_value_t = 300, value_name = "SECONDS")]
        timeout: u64,
        #[command(flatten)]
        machines: FleetMachineArgs,
    },
    /// Running and recent fleets: name, status, cells promoted and failed, age.
    List {
        /// How many of the most recent fleet executions to show.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        machines: FleetMachineArgs,
    },
}
