package main

// docs is the help of every command and subcommand (help.go prints it).
var docs = map[string]doc{
	"help": {
		synopsis: "promptctl help [COMMAND [SUBCOMMAND]]",
		summary:  "show the commands, or one command's flags and examples",
		text:     "Prints the list of commands, or the synopsis, description, flags and examples of one\ncommand; `promptctl COMMAND --help` prints the same.",
		examples: []string{"promptctl help apply", "promptctl help release start", "promptctl release start --help"},
	},
	"apply": {
		synopsis: "promptctl apply -f DIR|FILE [--atomic] [--env ENV] [--message M] [--dry-run] [--rebase]",
		summary:  "publish prompt files as new versions (prompts as code)",
		text: `Publishes each prompt file (YAML or JSON: {agent, config, message?}) whose config differs
from promptd's latest version of its agent, with the version named in the lock file
(promptd.lock.json, beside the files) as base_version: a file based on an older version
than promptd's latest is a conflict (exit 3, with a diff), never an overwrite. apply
then records the versions it created in the lock file; commit it with the files.

--dry-run changes nothing: promptd checks each planned version as a create would
(?dry_run=true), so a config it would refuse is reported invalid with promptd's problem
code and field (exit 1), and each planned version is shown as a unified diff from
promptd's latest (with --rebase, to the merged config). --atomic publishes every file through one all-or-nothing import.
--env then points ENV at each applied version.

Fragments (DIR/fragments/*.yaml|json: {name, text|messages, variables?, fragments?,
message?, envs?}) are applied first: a fragment whose content differs from promptd's
latest version (promptd computes the content hash, ?dry_run=true) is published with that
latest as base_version (a version published meanwhile is a conflict, exit 3), then each
fragment env pointer its envs names is moved to the version the file is applied as; only
then are the agents published, so an agent referencing {name, env} or {name, version}
pins what was just published. An agent whose config references fragments is unchanged
when promptd would pin the same content hash as its latest version; one referencing a
fragment that was not applied is not published. --dry-run shows each fragment's plan,
diff and pointer moves, and the agents they would reach. --atomic and --env concern the
agents only.

--rebase turns a stale base into a three-way merge: promptd merges your changes since
the lock file's version with the versions published since (by JSON path; skills and
named messages keyed by name, tools by their function's name; messages without names
and memory are one value each), publishes the merged version (naming both parents) and
apply rewrites the file with the merged config. Where both changed the same path,
nothing is published for that agent and the overlaps are printed as a diff (promptd's
version as -, yours as +, the base in each hunk's header; exit 3).`,
		examples: []string{
			"promptctl apply -f prompts --dry-run",
			"promptctl apply -f prompts --rebase",
			"promptctl apply -f prompts --env prod --message \"shorter answers\"",
			"promptctl apply -f prompts/support.yaml --atomic --output json",
		},
	},
	"pull": {
		synopsis: "promptctl pull DIR [--agent A ...] [--force]",
		summary:  "write promptd's latest versions as prompt files and a lock file",
		text: `Writes promptd's latest version of every agent (or only each --agent A) into DIR, in
the format apply reads (AGENT.yaml, or the file that already defines the agent), and
records each in DIR's lock file (promptd.lock.json), so an apply right after is a
no-op (0 created). Use it to adopt what a server already holds, or to bring a stale
directory up to date. Lock entries of agents promptd does not have are dropped.
A file changed since it was last applied or pulled is not overwritten (exit 1,
nothing written) unless --force. An agent's file holds its fragment references
({name, env} or {name, version}), not the content promptd pinned. Without --agent, pull
also writes the latest version of every fragment as DIR/fragments/NAME.yaml (or the file
that already defines it), its envs the env pointers that name that version.`,
		examples: []string{"promptctl pull prompts", "promptctl pull prompts --agent support", "promptctl pull prompts && promptctl apply -f prompts  # 0 created"},
	},
	"agents": {
		synopsis: "promptctl agents",
		summary:  "list agents with their latest version and env pointers",
		text:     "Lists every agent (all pages): its latest version, content hash and env pointers.",
		examples: []string{"promptctl agents", "promptctl agents --output json"},
	},
	"versions": {
		synopsis: "promptctl versions AGENT [--limit N]",
		summary:  "list an agent's versions, newest first",
		text:     "Lists an agent's versions, newest first: number, content hash, when, by whom, message.",
		examples: []string{"promptctl versions support", "promptctl versions support --limit 5"},
	},
	"get": {
		synopsis: "promptctl get AGENT VERSION",
		summary:  "show one version with its config",
		text:     "Shows one version: its content hash, author, message and config (sorted keys).",
		examples: []string{"promptctl get support 2", "promptctl get support v2 --output json"},
	},
	"diff": {
		synopsis: "promptctl diff AGENT A B",
		summary:  "unified diff of two versions' configs",
		text:     "Prints the unified diff from version A to version B of an agent's config, as\nsorted-key, indented JSON; says so when they are the same.",
		examples: []string{"promptctl diff support 1 2"},
	},
	"envs": {
		synopsis: "promptctl envs AGENT [ENV]",
		summary:  "an agent's env pointers, or one env with its history",
		text:     "Without ENV: the agent's env pointers. With ENV: the version it points at, its\nrevision, revoked versions, the active release and the last moves.",
		examples: []string{"promptctl envs support", "promptctl envs support prod"},
		subs:     []string{"envs set"},
	},
	"envs set": {
		synopsis: "promptctl envs set AGENT ENV VERSION [--expected-revision N] [--reason R]",
		summary:  "point an env at a version",
		text: `Points ENV of AGENT at VERSION: a compare-and-set on the pointer's revision (the one
read just before, or --expected-revision, 0 for an env without a pointer), so a switch
someone made meanwhile is a conflict (exit 3), never overwritten. During an active
release the env's pointer is the release's (409 release_active: promote or roll it
back). A protected env opens a change request instead, printed with its id.`,
		examples: []string{"promptctl envs set support prod 3 --reason \"fixes refunds\"", "promptctl envs set support staging 2 --expected-revision 4"},
	},
	"rollback": {
		synopsis: "promptctl rollback AGENT ENV [--to V] [--reason R]",
		summary:  "roll an env back (its active release, or its pointer)",
		text: `Rolls the env's active release back if it has one; else moves the pointer back (to
--to V, or the newest older unrevoked version of its history). The version left is
revoked in the env, so runtimes and sessions pinned to it leave it.`,
		examples: []string{"promptctl rollback support prod --reason \"v2 answers too tersely\"", "promptctl rollback support prod --to 1"},
	},
	"release": {
		synopsis: "promptctl release start|set|pause|resume|promote|rollback|status ...",
		summary:  "roll a version out to a share of callers",
		text:     "Starts, ramps, pauses, resumes, promotes or rolls back a release: a candidate version\nserved to a sticky share of an env's callers. A release is named by its id, or by\nAGENT ENV for the env's active release.",
		subs:     []string{"release start", "release set", "release pause", "release resume", "release promote", "release rollback", "release status"},
		examples: []string{"promptctl release start support prod --percent 10", "promptctl release set support prod 50", "promptctl release promote support prod"},
	},
	"release start": {
		synopsis: "promptctl release start AGENT ENV --percent P [--candidate V] [--stickiness user|session] [--step P@DUR|promote@DUR ...] [--guard METRIC:MAX[:pause|rollback]] [--message M]",
		summary:  "start a release of a candidate version",
		text:     "Starts a release in ENV: --percent P of callers (sticky by user or session) get the\ncandidate (default: the agent's latest version), the rest the env's current version.\n--step schedules ramps; --guard pauses or rolls back when the candidate is worse.",
		examples: []string{"promptctl release start support prod --percent 10",
			"promptctl release start support prod --percent 5 --step 25@1h --step promote@2h --guard failure_rate:2:rollback"},
	},
	"release set": {
		synopsis: "promptctl release set ID|AGENT ENV PERCENT [--reason R]",
		summary:  "change a release's percentage",
		text:     "Sets the share of callers that get the candidate (0..100, 2 decimals at most).",
		examples: []string{"promptctl release set support prod 50", "promptctl release set rel_0123 25"},
	},
	"release pause":    transition("pause", "pause a release (its percentage stays, scheduled steps wait)"),
	"release resume":   transition("resume", "resume a paused release"),
	"release promote":  transition("promote", "point the env at the candidate and end the release"),
	"release rollback": transition("rollback", "end the release on the baseline; the candidate is revoked in the env"),
	"release status": {
		synopsis: "promptctl release status ID|AGENT ENV",
		summary:  "show a release, or an env's last releases",
		text:     "With ID: the release, its guard, its arms' figures and its history. With AGENT ENV:\nthe env's last releases.",
		examples: []string{"promptctl release status support prod", "promptctl release status rel_0123"},
	},
	"sessions": {
		synopsis: "promptctl sessions get ID [--since SEQ] [--limit N]",
		summary:  "show a session: pin, lease, state keys and turns",
		text:     "Shows a session: agent, env, pinned version, state, lease holder and fence, state\nkeys, and its turns after --since.",
		examples: []string{"promptctl sessions get s-123", "promptctl sessions get s-123 --since 40 --limit 10"},
	},
	"events": {
		synopsis: "promptctl events [-w|--follow] [--since SEQ] [--actions a,b.*] [--agent A] [--env E] [--board B] [--limit N]",
		summary:  "list or follow the change feed",
		text:     "Lists the change feed, or follows it (-w) until interrupted, resuming by position\nafter a drop. --output json writes one JSON object per line with -w.",
		examples: []string{"promptctl events --limit 20", "promptctl events -w --actions 'release.*' --agent support"},
	},
	"mcp": {
		synopsis: "promptctl mcp --env ENV",
		summary:  "serve promptd's MCP server over stdio (Claude Desktop, an IDE)",
		text: `Serves MCP (the Model Context Protocol) on stdin and stdout for a local client by
bridging it to promptd's streamable HTTP endpoint /v1/mcp/ENV with --server and --token
(or PROMPTD_URL and PROMPTD_TOKEN): the prompts are ENV's agents the token's scopes
allow, the tools claim board records and append session turns. Logs go to stderr; it
returns when stdin closes.`,
		examples: []string{"promptctl mcp --env prod", "PROMPTD_URL=https://promptd.example.com PROMPTD_TOKEN=pd_... promptctl mcp --env staging"},
	},
	"audit": {
		synopsis: "promptctl audit [--agent A] [--env E] [--session S] [--action X] [--since ID] [--limit N] [--oldest-first]",
		summary:  "read the audit log, newest first",
		text:     "Lists audit events, newest first (before --since ID when given); --oldest-first lists\nthe oldest first (after --since ID).",
		examples: []string{"promptctl audit --agent support", "promptctl audit --action env.rolled_back --limit 5", "promptctl audit --oldest-first --since 120"},
	},
	"tokens": {
		synopsis: "promptctl tokens create|list|revoke ...",
		summary:  "create, list and revoke API tokens",
		text:     "Manages API tokens (admin): create one (its secret is shown once), list them, revoke one.",
		subs:     []string{"tokens create", "tokens list", "tokens revoke"},
		examples: []string{"promptctl tokens create ci --role admin --agents 'support*' --expires 720h", "promptctl tokens list", "promptctl tokens revoke ci"},
	},
	"tokens create": {
		synopsis: "promptctl tokens create NAME --role admin|runtime [--agents a,b*] [--envs e] [--boards b] [--expires 720h]",
		summary:  "create a token; its secret is shown once",
		text:     "Creates a token with a role and optional scopes (names or prefixes ending in *).",
		examples: []string{"promptctl tokens create ci --role admin --agents 'support*'", "promptctl tokens create bot --role runtime --envs prod --expires 720h"},
	},
	"tokens list": {
		synopsis: "promptctl tokens list",
		summary:  "list tokens (never their secrets)",
		text:     "Lists every token that can act: the bootstrap tokens of PROMPTD_TOKENS first (unscoped, never expiring; revoked only by restarting promptd without them), then every managed token, revoked ones included: name, id, role, scopes, principal, expiry, last use, revocation.",
		examples: []string{"promptctl tokens list --output json"},
	},
	"tokens revoke": {
		synopsis: "promptctl tokens revoke NAME",
		summary:  "revoke a token",
		text:     "Revokes a token: every promptd instance refuses it within a second.",
		examples: []string{"promptctl tokens revoke ci"},
	},
	"approvals": {
		synopsis: "promptctl approvals list|show|approve|reject|cancel ...",
		summary:  "review change requests of protected envs",
		text:     "Lists, shows and decides change requests: writes to protected envs that wait for approvals.",
		subs:     []string{"approvals list", "approvals show", "approvals approve", "approvals reject", "approvals cancel"},
		examples: []string{"promptctl approvals list", "promptctl approvals approve cr_0123456789abcdef0123"},
	},
	"approvals list": {
		synopsis: "promptctl approvals list [--state pending] [--agent A] [--env E]",
		summary:  "list change requests",
		text:     "Lists change requests in a state (default pending; all for every state).",
		examples: []string{"promptctl approvals list --state all --agent support"},
	},
	"approvals show":    decision("show", "show a change request"),
	"approvals approve": decision("approve", "approve a change request"),
	"approvals reject":  decision("reject", "reject a change request"),
	"approvals cancel":  decision("cancel", "cancel your change request"),
}

func transition(verb, summary string) doc {
	return doc{synopsis: "promptctl release " + verb + " ID|AGENT ENV [--reason R]", summary: summary,
		text:     "Asks promptd to " + verb + " the release, based on the revision just read (a concurrent\nchange is a conflict, exit 3).",
		examples: []string{"promptctl release " + verb + " support prod --reason \"why\"", "promptctl release " + verb + " rel_0123"}}
}

func decision(verb, summary string) doc {
	return doc{synopsis: "promptctl approvals " + verb + " ID", summary: summary, text: summary + ".",
		examples: []string{"promptctl approvals " + verb + " cr_0123456789abcdef0123"}}
}
