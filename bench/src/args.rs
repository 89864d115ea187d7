//! The benchmark's command line (`bench --help`), read by every phase.

use clap::Parser;

#[derive(Parser, Debug, Clone)]
#[command(about = "randomsecret benchmarks against the local control plane")]
pub struct Args {
    /// Numbers of RandomSecrets to converge (the largest also gets the memory, rotation and startup phases).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    pub sizes: Vec<usize>,
    /// Namespaces the objects are spread over.
    #[arg(long, default_value_t = 4)]
    pub namespaces: usize,
    /// Writes in flight, for the benchmark's client, the floor, the controller and the peer alike.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Rotations for the latency phase, sent at --rotation-rate per second
    /// (default: 1,000, the count the tail's targets are set over, or half
    /// the largest size if that is fewer).
    #[arg(long = "rotations", value_name = "N")]
    pub rotations_given: Option<usize>,
    /// The rotations the run makes: `--rotations`, or its default for the
    /// sizes ([`Args::resolve_rotations`]).
    #[arg(skip)]
    pub rotations: usize,
    #[arg(long, default_value_t = 20.0)]
    pub rotation_rate: f64,
    /// Rotations per block: the floor's and ours alternate in blocks of
    /// this many (A B B A ...), so that the machine's drift over the phase
    /// falls on both sides alike.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..))]
    pub rotation_block: u16,
    /// Unrelated Secrets (of --bulk-kib KiB each) for the memory phase.
    #[arg(long, default_value_t = 10000)]
    pub bulk: usize,
    #[arg(long, default_value_t = 100)]
    pub bulk_kib: usize,
    /// Seconds over which steady RSS and idle CPU are sampled.
    #[arg(long, default_value_t = 20)]
    pub steady_seconds: u64,
    /// Convergence pairs (the floor, then the controller, each on a
    /// compacted etcd) at each size but the largest; the ratio is their
    /// median.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    pub pairs: u16,
    /// Convergence pairs at the largest size (whose last pair goes on to
    /// the memory, rotation, startup and failover phases). Five, not three,
    /// from 2026-12-07: a pair's ratio at 10,000 moved from 1.03x to 1.22x
    /// within one run with the host's speed, too wide for a median of three.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    pub largest_pairs: u16,
    /// Keep the control plane running between convergence runs: only etcd
    /// is compacted. By default each run (a floor, ours, the peer, the
    /// kinds' pair) starts on a restarted kube-apiserver, controller-manager,
    /// scheduler and kwok (`fresh`).
    #[arg(long)]
    pub no_restarts: bool,
    /// Print the convergence pairs of these earlier runs' results.json
    /// pooled per size and controller binary (the median over every pair,
    /// beside each run's), and exit; no control plane needed.
    #[arg(long, num_args = 1.., value_name = "RESULTS_JSON")]
    pub pool: Vec<std::path::PathBuf>,
    /// With `--pool`: pool every run as one controller, whatever binary
    /// each recorded (for runs of one source built more than once, or
    /// written before results.json recorded the binary).
    #[arg(long, requires = "pool")]
    pub pool_as_one: bool,
    /// Skip the floor (when profiling the controller).
    #[arg(long)]
    pub no_floor: bool,
    /// Skip the peer controller.
    #[arg(long)]
    pub no_peer: bool,
    /// Diagnostic: at the largest size, run the floor a second time with
    /// the controller's two convergence watches open (RandomSecrets, and
    /// our Secrets metadata-only), to tell what the watches cost the
    /// apiserver from what the controller adds.
    #[arg(long)]
    pub floor_watches: bool,
    /// The scale phase (last): grow the largest size's set to this many
    /// RandomSecrets (each with its Secret; no more ReplicaSets) in 4 equal
    /// steps, with the steady RSS after each, then restart the controller with
    /// all of them. Default: 5 times the largest size (50,000 with the default sizes).
    #[arg(long)]
    pub big: Option<usize>,
    /// Skip the scale phase.
    #[arg(long, alias = "no-50k")]
    pub no_big: bool,
    /// Annotated Secrets created through the webhook in the webhook phase,
    /// at --webhook-rate per second.
    #[arg(long, default_value_t = 1000)]
    pub webhook_creates: usize,
    #[arg(long, default_value_t = 50.0)]
    pub webhook_rate: f64,
    /// Skip the webhook phase.
    #[arg(long)]
    pub no_webhook: bool,
    /// Skip the flood at the end of the webhook phase: --webhook-flood-clients
    /// clients sending AdmissionReviews of 8 MiB and 3 MiB straight to the port.
    #[arg(long)]
    pub no_webhook_flood: bool,
    #[arg(long, default_value_t = 24)]
    pub webhook_flood_clients: usize,
    /// Run only the webhook phase (and its flood): a quick look.
    #[arg(long)]
    pub only_webhook: bool,
    /// RandomSecrets pushed to OpenBao in the push phase, created and then
    /// rotated at --push-rate per second (needs BAO_DIR: e2e/build-openbao.sh).
    #[arg(long, default_value_t = 200)]
    pub pushes: usize,
    #[arg(long, default_value_t = 20.0)]
    pub push_rate: f64,
    /// Skip the push phase.
    #[arg(long)]
    pub no_push: bool,
    /// Skip the kinds phase (after the core sizes): convergence with a key
    /// pair and a template against its floor, and RSA keys under a rotation
    /// workload with the lease watched.
    #[arg(long)]
    pub no_kinds: bool,
    /// Run only the kinds phase: a quick look.
    #[arg(long)]
    pub only_kinds: bool,
    /// RandomSecrets with a password, an ed25519 SSH key pair and a template
    /// converged by the floor and by the controller in the kinds phase.
    #[arg(long, default_value_t = 1000)]
    pub kinds_count: usize,
    /// RSA-4096 RandomSecrets created at once during the kinds phase's
    /// rotation workload.
    #[arg(long, default_value_t = 200)]
    pub rsa_count: usize,
    /// Plain RandomSecrets the kinds phase rotates, when the largest size's
    /// set is gone by then (it is kept for the scale phase).
    #[arg(long, default_value_t = 1000)]
    pub kinds_plain: usize,
    /// Diagnostic: the RSA part's controller reconciles this many at once
    /// (default: --concurrency), to tell what its reconcile slots cost
    /// the rotations from what the CPU does.
    #[arg(long)]
    pub kinds_reconcile_concurrency: Option<usize>,
    /// The controller's --key-generation-concurrency in the kinds phase
    /// (default: the controller's own, half the cores).
    #[arg(long)]
    pub key_generation_concurrency: Option<u16>,
    /// Where results.json goes.
    #[arg(long, default_value = "target/bench")]
    pub out: std::path::PathBuf,
    /// Where the SVG charts go. Not docs/src/bench, the committed charts:
    /// those are drawn on purpose from the run whose table is committed
    /// (`--render-charts target/bench/results.json --charts docs/src/bench`).
    #[arg(long, default_value = "target/bench/charts")]
    pub charts: std::path::PathBuf,
    /// Only draw the charts (into --charts) from an existing results.json; runs nothing.
    #[arg(long, value_name = "RESULTS_JSON")]
    pub render_charts: Option<std::path::PathBuf>,
    /// The shards phase: this many controllers, each with its own
    /// --shard-selector, over --shards-count RandomSecrets (each with its
    /// Secret and a ReplicaSet), against one unsharded replica on the same.
    #[arg(long, default_value_t = 4)]
    pub shards: usize,
    #[arg(long, default_value_t = 40000)]
    pub shards_count: usize,
    /// Skip the shards phase.
    #[arg(long)]
    pub no_shards: bool,
    /// Run only the shards phase: a quick look.
    #[arg(long)]
    pub only_shards: bool,
    /// First of the local ports for the controllers' metrics and health endpoints.
    #[arg(long, default_value_t = 19080)]
    pub port: u16,
    /// The apiserver's port (from the kubeconfig): connections to it are counted.
    #[arg(skip)]
    pub api_port: u16,
}

/// The rotations of a run without `--rotations`.
pub const DEFAULT_ROTATIONS: usize = 1000;

impl Args {
    /// Sets [`Args::rotations`] for a run whose largest size is `largest`.
    /// The rotations take every (largest / rotations)-th object from 0 and
    /// the static edits as many from 1: at least two apart, or an edit lands
    /// on a rotated object and never reaches the name it waits for. So a
    /// count given that is over half the largest size is an error, and the
    /// default shrinks to fit (a `--sizes 1000` run makes 500).
    pub fn resolve_rotations(&mut self, largest: usize) -> anyhow::Result<()> {
        self.rotations = match self.rotations_given {
            Some(r) => {
                anyhow::ensure!(
                    r.saturating_mul(2) <= largest,
                    "--rotations {r} is more than half the largest size {largest}: the rotations and the static edits after them need objects of their own"
                );
                r
            }
            None => DEFAULT_ROTATIONS.min(largest / 2),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("bench").chain(line.iter().copied())).unwrap()
    }

    #[test]
    fn rotations_default_to_a_thousand_or_half_the_largest_size() {
        let mut a = parsed(&[]);
        a.resolve_rotations(10_000).unwrap();
        assert_eq!(a.rotations, 1000);
        a.resolve_rotations(1000).unwrap();
        assert_eq!(a.rotations, 500);
        let mut given = parsed(&["--rotations", "200"]);
        given.resolve_rotations(1000).unwrap();
        assert_eq!(given.rotations, 200);
        let mut over = parsed(&["--rotations", "501"]);
        let e = over.resolve_rotations(1000).unwrap_err().to_string();
        assert!(e.contains("more than half the largest size 1000"), "{e}");
    }
}
