//! Connections as psql makes them, and the errors a user meets: each is one
//! clear line with a documented exit code, and no password is ever printed.

use std::os::unix::fs::PermissionsExt;

use crate::util::{run_command, server, sluice_command, Run, TestDb, PASSWORD};

/// `sluice ARGS --db CONNINFO`: a run as the role `conninfo` names.
fn sluice_as(conninfo: &str, args: &[&str]) -> Run {
    let mut cmd = sluice_command();
    cmd.args(args).args(["--db", conninfo]);
    run_command(cmd)
}

fn table_and_file(db: &TestDb) -> String {
    db.execute("CREATE TABLE t (id int, name text)");
    let file = db.file("d.csv", b"1,a\n2,b\n3,c\n");
    file.to_str().unwrap().to_string()
}

/// No --db: PGHOST, PGPORT, PGUSER, PGDATABASE and a PGPASSFILE in .pgpass
/// format are honoured, over TCP with password authentication.
#[test]
fn pg_variables_and_pgpass_are_honoured() {
    let db = TestDb::new();
    let file = table_and_file(&db);
    let passfile = db.file("pgpass", format!("127.0.0.1:{}:*:sluice:{PASSWORD}\n", server().port).as_bytes());
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    let with_env = |passfile: &str| {
        let mut cmd = sluice_command();
        cmd.args(["load", &file, "--table", "t"])
            .env("PGHOST", "127.0.0.1")
            .env("PGPORT", server().port.to_string())
            .env("PGUSER", "sluice")
            .env("PGDATABASE", &db.name)
            .env("PGPASSFILE", passfile);
        run_command(cmd)
    };
    let run = with_env(passfile.to_str().unwrap());
    run.assert_ok();
    assert_eq!(db.count("t"), 3);
    assert!(run.stdout.contains("into public.t"), "{}", run.stdout);
    // The same without a usable password file fails to authenticate.
    let run = with_env("/nonexistent/pgpass");
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("password"), "{}", run.stderr);
    assert_eq!(db.count("t"), 3);
}

/// `--db service=NAME` reads host, port, database, user and password from
/// the file `PGSERVICEFILE` names, as psql does; the password in it is
/// printed nowhere, on success or when the server refuses it.
#[test]
fn service_file_is_honoured() {
    let db = TestDb::new();
    let file = table_and_file(&db);
    let service = |password: &str| {
        let text = format!(
            "[sluice_test]\nhost=127.0.0.1\nport={}\ndbname={}\nuser=sluice\npassword={password}\n",
            server().port,
            db.name
        );
        let path = db.file(&format!("services-{password}"), text.as_bytes());
        let mut cmd = sluice_command();
        cmd.args(["load", &file, "--table", "t", "--db", "service=sluice_test"])
            .env("PGSERVICEFILE", path)
            .env_remove("PGHOST")
            .env_remove("PGPORT")
            .env_remove("PGDATABASE")
            .env_remove("PGUSER")
            .env_remove("PGPASSWORD");
        run_command(cmd)
    };
    let run = service(PASSWORD);
    run.assert_ok();
    assert_eq!(db.count("t"), 3);
    assert!(!run.output().contains(PASSWORD), "{}", run.output());
    let run = service("NotThePassword42");
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("password authentication failed"), "{}", run.stderr);
    assert!(!run.output().contains("NotThePassword42"), "{}", run.output());
    assert_eq!(db.count("t"), 3);
}

#[test]
fn wrong_password_is_one_clear_line_without_the_password() {
    let db = TestDb::new();
    let file = table_and_file(&db);
    let url = db.url_with_password("WrongSecret123");
    let mut cmd = sluice_command();
    cmd.args(["load", &file, "--table", "t", "--db", &url]);
    let run = run_command(cmd);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.starts_with("sluice: connecting to postgresql://sluice@127.0.0.1:"), "{}", run.stderr);
    assert!(run.stderr.contains("password authentication failed"), "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(!run.output().contains("WrongSecret123"), "{}", run.output());
    // PGPASSWORD is masked too.
    let mut cmd = sluice_command();
    cmd.args([
        "load",
        &file,
        "--table",
        "t",
        "--db",
        &format!("host=127.0.0.1 port={} dbname={}", server().port, db.name),
    ])
    .env("PGUSER", "sluice")
    .env("PGPASSWORD", "AlsoWrong456");
    let run = run_command(cmd);
    assert_eq!(run.code, 4);
    assert!(!run.output().contains("AlsoWrong456"), "{}", run.output());
}

#[test]
fn missing_table_and_column_name_what_is_missing() {
    let db = TestDb::new();
    let file = table_and_file(&db);
    let url = db.url_with_password(PASSWORD);
    let run = db.load(&[&file, "--table", "nope"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("table \"nope\" does not exist (searched schemas: public)"), "{}", run.stderr);
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);
    // A typo: the table of the closest name, in any schema.
    db.execute("CREATE SCHEMA sales; CREATE TABLE sales.\"Orders\" (id int)");
    let run = db.load(&[&file, "--table", "ordres"]);
    let says = "table \"ordres\" does not exist (searched schemas: public); did you mean sales.\"Orders\"? Otherwise \
                create it first";
    assert!(run.stderr.contains(says), "{}", run.stderr);
    let run = db.load(&[&file, "--table", "t", "--columns", "id,missing"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("column \"missing\" does not exist in table public.t; its columns are: id, name"));
    db.execute("CREATE VIEW v AS SELECT * FROM t");
    let run = db.load(&[&file, "--table", "v"]);
    assert_eq!(run.code, 2);
    let refusal = "\"public\".\"v\" is a view without an INSTEAD OF INSERT trigger; sluice loads only into tables";
    assert!(run.stderr.contains(refusal), "{}", run.stderr);
    // A read-only server or role (a standby, default_transaction_read_only).
    db.execute(&format!("ALTER DATABASE {} SET default_transaction_read_only = on", db.name));
    let run = db.load(&[&file, "--table", "t"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(
        run.stderr.contains("read-only transaction [25006]; sluice writes, so connect to the primary"),
        "{}",
        run.stderr
    );
    // Errors after a successful password login do not show the password.
    let mut cmd = sluice_command();
    cmd.args(["load", &file, "--table", "nope", "--db", &url]);
    let run = run_command(cmd);
    assert_eq!(run.code, 2);
    assert!(!run.output().contains(PASSWORD), "{}", run.output());
}

/// More workers than the server lets the role connect: the load goes on
/// with the connections it got, loads every row and says what happened,
/// even when it lasts longer than --retry-timeout (it used to fail then).
#[test]
fn workers_beyond_a_connection_limit_do_not_fail_the_load() {
    let db = TestDb::new();
    let role = format!("{}_limited", db.name);
    db.execute(&format!("CREATE ROLE {role} LOGIN CONNECTION LIMIT 3; GRANT ALL ON DATABASE {} TO {role}", db.name));
    db.execute(&format!("CREATE TABLE t (id int, name text); ALTER TABLE t OWNER TO {role}"));
    let data: String = (0..600_000).map(|i| format!("{i},name {i}\n")).collect();
    let file = db.file("d.csv", data.as_bytes());
    let conninfo = format!("{} user={role}", db.conninfo());
    let args = ["--table", "t", "--workers", "8", "--chunk-size", "16KiB", "--retry-timeout", "300ms"];
    let run = run_command({
        let mut cmd = sluice_command();
        cmd.args([&["load", file.to_str().unwrap(), "--db", &conninfo][..], &args].concat());
        cmd
    });
    run.assert_ok();
    assert_eq!(db.count("t"), 600_000);
    assert!(run.stderr.contains(&format!("too many connections for role \"{role}\"")), "{}", run.stderr);
    assert!(run.stderr.contains("never loaded"), "{}", run.stderr);
    let seconds: f64 = run.stdout.split(" in ").nth(1).and_then(|s| s.split(' ').next()).unwrap().parse().unwrap();
    assert!(seconds > 0.3, "the load ({seconds} s) must outlast --retry-timeout for this test to bite");
}

/// sluice's own tables are never loaded into, even when a bare name finds
/// them first: the test role is named `sluice`, so once the ledger exists
/// its search path (`"$user", public`) puts the ledger's schema first.
#[test]
fn the_ledger_is_never_a_target_even_when_a_bare_name_finds_it() {
    let db = TestDb::new();
    db.execute("CREATE TABLE jobs (id int); CREATE TABLE t (id int)");
    let file = db.file("ids.csv", b"1\n2\n");
    db.load(&[file.to_str().unwrap(), "--table", "t"]).assert_ok();
    assert_eq!(db.scalar("SELECT 'jobs'::regclass = 'sluice.jobs'::regclass"), "t", "the trap this test is about");
    let jobs = db.scalar("SELECT count(*) FROM sluice.jobs");
    for name in ["jobs", "sluice.rejects"] {
        let run = db.load(&[file.to_str().unwrap(), "--table", name]);
        run.assert_refused("one of sluice's own tables");
        assert!(run.stderr.contains("such as --table public."), "{}", run.stderr);
    }
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.jobs"), jobs);
    db.load(&[file.to_str().unwrap(), "--table", "public.jobs"]).assert_ok();
    assert_eq!(db.count("public.jobs"), 2);
}

/// Names as psql takes them in SQL: quoted parts keep their case and may
/// hold dots, bare ones are folded to lower case; a name that exists as
/// written is still taken as written.
#[test]
fn tables_and_columns_named_as_in_sql() {
    let db = TestDb::new();
    db.execute("CREATE SCHEMA \"My Schema\"");
    db.execute("CREATE TABLE \"My Schema\".\"we\"\"ird.T\" (id int, \"Name\" text)");
    db.execute("CREATE TABLE orders (id int, name text)");
    db.execute("CREATE TABLE \"Orders\" (id int, name text)");
    let file = db.file("d.csv", b"1,a\n2,b\n");
    let file = file.to_str().unwrap();
    db.load(&[file, "--table", "\"My Schema\".\"we\"\"ird.T\"", "--columns", "ID,\"Name\""]).assert_ok();
    assert_eq!(db.count("\"My Schema\".\"we\"\"ird.T\""), 2);
    assert_eq!(db.scalar("SELECT string_agg(\"Name\", ',' ORDER BY id) FROM \"My Schema\".\"we\"\"ird.T\""), "a,b");
    db.load(&[file, "--table", "ORDERS"]).assert_ok();
    assert_eq!((db.count("orders"), db.count("\"Orders\"")), (2, 0), "bare ORDERS is orders");
    db.load(&[file, "--table", "Orders"]).assert_ok();
    assert_eq!((db.count("orders"), db.count("\"Orders\"")), (2, 2), "Orders exists as written, so it wins");
}

#[test]
fn missing_file_and_refused_connection() {
    let db = TestDb::new();
    table_and_file(&db);
    let run = db.load(&["/nonexistent/data.csv", "--table", "t"]);
    assert_eq!(run.code, 2);
    assert_eq!(run.stderr.trim(), "sluice: /nonexistent/data.csv: No such file or directory");
    let folder = db.dir.path().to_str().unwrap();
    let run = db.load(&[folder, "--table", "t"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("a folder, not a file; name its files, or a glob"), "{}", run.stderr);
    // A URL: the command that streams it in (it was "No such file or directory").
    let run = db.load(&["https://loader:pw9876@example.com/data.csv?token=t0k3n", "--table", "t"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("a URL, not a file: sluice reads files and stdin. Stream it in, `curl -fsSL URL | sluice load - --format csv ...`"), "{}", run.stderr);
    assert!(!run.output().contains("pw9876") && !run.output().contains("t0k3n"), "{}", run.stderr);
    let file = db.file("x.csv", b"1,a\n");
    let mut cmd = sluice_command();
    cmd.args(["load", file.to_str().unwrap(), "--table", "t", "--db", "postgresql://u:pw9876@127.0.0.1:1/db"]);
    let run = run_command(cmd);
    assert_eq!(run.code, 4);
    assert!(run.stderr.contains("connecting to postgresql://u@127.0.0.1:1/db"), "{}", run.stderr);
    assert!(!run.output().contains("pw9876"));
}

/// A refusal that is not about a record (here: no INSERT privilege) is the
/// database's trouble (exit 4), not blamed on the first record.
/// A role that may not insert into the table (or into one of the columns
/// loaded, or with `--truncate` empty it) is refused before the job is
/// opened, with the GRANT to ask the owner for: COPY said it at the first
/// chunk (`COPY refused: permission denied for table t`, exit 4), with
/// advice to resume.
#[test]
fn a_role_without_the_right_to_insert_is_refused_before_anything_is_done() {
    let db = TestDb::new();
    let file = table_and_file(&db);
    // The ledger tables exist (an earlier load by their owner made them) and
    // the reader may use them: what a non-owner needs, as the README says.
    let other = db.file("other.csv", b"1,x\n");
    db.execute("CREATE TABLE other (id int, name text)");
    db.load(&[other.to_str().unwrap(), "--table", "other"]).assert_ok();
    let role = format!("reader_{}", db.name);
    db.execute(&format!(
        "CREATE ROLE {role} LOGIN; GRANT SELECT ON t TO {role}; GRANT USAGE ON SCHEMA sluice TO {role}; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA sluice TO {role}"
    ));
    let conninfo = format!("{} user={role}", db.conninfo());
    let jobs = || db.scalar("SELECT count(*) FROM sluice.jobs");
    let jobs_before = jobs();
    let run = sluice_as(&conninfo, &["load", &file, "--table", "t"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let owner = db.scalar("SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 't'::regclass");
    let says = format!(
        "sluice: role \"{role}\" may not insert into public.t: ask its owner, \"{owner}\" (or a superuser), to run GRANT \
         INSERT ON \"public\".\"t\" TO \"{role}\", or load as a role that may"
    );
    assert_eq!(run.stderr.trim(), says);
    db.execute(&format!("GRANT INSERT (id) ON t TO {role}"));
    let run = sluice_as(&conninfo, &["load", &file, "--table", "t"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("may not insert into column \"name\" of public.t"), "{}", run.stderr);
    assert!(run.stderr.contains("GRANT INSERT (\"name\") ON \"public\".\"t\""), "{}", run.stderr);
    db.execute(&format!("GRANT INSERT ON t TO {role}"));
    let run = sluice_as(&conninfo, &["load", &file, "--table", "t", "--truncate"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("may not empty public.t (--truncate)"), "{}", run.stderr);
    assert!(run.stderr.contains("GRANT TRUNCATE ON \"public\".\"t\""), "{}", run.stderr);
    assert_eq!((jobs(), db.count("t")), (jobs_before, 0), "no job opened, nothing loaded");
    sluice_as(&conninfo, &["load", &file, "--table", "t"]).assert_ok();
    assert_eq!(db.count("t"), 3);
}

/// A role given INSERT on a table and not USAGE on its serial's sequence,
/// loading a file without the key, is refused before anything is done,
/// with the GRANT to ask for: every record was rejected, `permission
/// denied for sequence`. An identity's sequence needs no right of its own.
/// A right a view's trigger needs is told once its records are refused.
#[test]
fn a_role_that_may_not_use_the_sequence_of_a_key_left_out_is_refused_before_anything_is_done() {
    let db = TestDb::new();
    db.execute("CREATE TABLE public.serial_key (id serial, name text); CREATE TABLE public.identity_key (id int GENERATED ALWAYS AS IDENTITY, name text)");
    let file = db.file("names.csv", b"a\nb\n");
    // The ledger's tables, made by their owner's load.
    let seed = db.file("seed.csv", b"s\n");
    db.load(&[seed.to_str().unwrap(), "--table", "identity_key", "--columns", "name"]).assert_ok();
    let role = format!("keyless_{}", db.name);
    db.execute(&format!(
        "CREATE ROLE {role} LOGIN; GRANT INSERT ON serial_key, identity_key TO {role}; \
         GRANT USAGE ON SCHEMA sluice TO {role}; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA sluice TO {role}"
    ));
    let conninfo = format!("{} user={role}", db.conninfo());
    let load =
        |table: &str| sluice_as(&conninfo, &["load", file.to_str().unwrap(), "--table", table, "--columns", "name"]);
    let jobs_before = db.scalar("SELECT count(*) FROM sluice.jobs");
    let run = load("serial_key");
    assert_eq!(run.code, 2, "{}", run.stderr);
    let says = format!(
        "role \"{role}\" may not take values from sequence serial_key_id_seq, which gives column \"id\" of \
         public.serial_key its default, and the columns loaded leave \"id\" out: ask its owner"
    );
    assert!(run.stderr.contains(&says), "{}", run.stderr);
    assert!(run.stderr.contains(&format!("GRANT USAGE ON SEQUENCE serial_key_id_seq TO \"{role}\"")), "{}", run.stderr);
    assert_eq!((db.scalar("SELECT count(*) FROM sluice.jobs"), db.count("serial_key")), (jobs_before, 0));
    load("identity_key").assert_ok();
    assert_eq!(db.count("identity_key"), 3);
    // A file with the key takes no value from the sequence.
    let keyed = db.file("keyed.csv", b"10,x\n");
    sluice_as(&conninfo, &["load", keyed.to_str().unwrap(), "--table", "serial_key"]).assert_ok();
    db.execute(&format!("GRANT USAGE ON SEQUENCE serial_key_id_seq TO {role}"));
    load("serial_key").assert_ok();
    assert_eq!(db.scalar("SELECT string_agg(id || name, ' ' ORDER BY id) FROM serial_key"), "1a 2b 10x");
    // A view's trigger that writes where the role may not: every record is
    // refused for that right, which the summary (or the stop) says.
    db.execute(&format!(
        "CREATE TABLE public.backing (name text); CREATE VIEW public.entry AS SELECT name FROM public.backing; \
         CREATE FUNCTION public.entry_in() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN INSERT INTO public.backing VALUES (NEW.name); RETURN NEW; END $$; \
         CREATE TRIGGER entry_in INSTEAD OF INSERT ON public.entry FOR EACH ROW EXECUTE FUNCTION public.entry_in(); \
         GRANT INSERT ON public.entry TO {role}"
    ));
    let rejects = db.dir.path().join("entry.rejects.jsonl");
    let rejects = rejects.to_str().unwrap();
    let to_entry = |file: &std::path::Path| {
        let args = ["load", file.to_str().unwrap(), "--table", "entry", "--columns", "name", "--rejects", rejects];
        sluice_as(&conninfo, &args)
    };
    let run = to_entry(&file);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let says = "all 2 records were rejected for a right the role lacks, not for their values; the first: ";
    assert!(run.stderr.contains(says) && run.stderr.contains("permission denied for table backing"), "{}", run.stderr);
    let many: String = (0..1_200).map(|i| format!("n{i}\n")).collect();
    let many = db.file("many.csv", many.as_bytes());
    let run = to_entry(&many);
    assert_eq!(run.code, 5, "{}", run.stderr);
    let stop = "the first 1,000 records were all rejected, for a right the role lacks, not for their values";
    assert!(run.stderr.contains(stop) && run.stderr.contains("GRANT INSERT ON TABLE ..."), "{}", run.stderr);
    db.execute(&format!("GRANT INSERT ON public.backing TO {role}"));
    to_entry(&many).assert_ok();
    assert_eq!(db.count("backing"), 1_200);
}

/// COPY needs INSERT alone, and so does sluice: a loading role that may not
/// read the table nor create schemas is told the one statement to ask for
/// (a schema of its own for the ledger), and then loads, rejects included,
/// also without the right to create temporary objects.
#[test]
fn a_role_that_may_only_insert_loads_once_it_owns_the_ledger_schema() {
    let db = TestDb::new();
    let file = table_and_file(&db);
    let role = format!("loader_{}", db.name);
    db.execute(&format!("CREATE ROLE {role} LOGIN; GRANT INSERT ON t TO {role}"));
    let conninfo = format!("{} user={role}", db.conninfo());
    let rejects = db.dir.path().join("t.rejects.jsonl");
    let load =
        |file: &str| sluice_as(&conninfo, &["load", file, "--table", "t", "--rejects", rejects.to_str().unwrap()]);
    let run = load(&file);
    assert_eq!(run.code, 4, "{}", run.stderr);
    let ask = format!("ask someone who may to run CREATE SCHEMA sluice AUTHORIZATION \"{role}\" in database");
    assert!(run.stderr.contains(&ask), "{}", run.stderr);
    db.execute(&format!("CREATE SCHEMA sluice AUTHORIZATION {role}"));
    let run = load(&file);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows = db.count("t");
    assert!(rows > 0);
    let bad = db.file("bad.csv", b"9001,fine\nnot a number,x\n9002,fine\n");
    let run = load(bad.to_str().unwrap());
    assert_eq!(run.code, 1, "one reject: {}", run.stderr);
    assert_eq!(db.count("t"), rows + 2);
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.rejects"), "1");
    // An export a keyed table mostly holds, with --on-conflict-do-nothing:
    // the staged path's temporary table is made by a SELECT of the table,
    // which this role may not run, so its chunks go the direct way. (The
    // schema `sluice` is the test's user's own now: `public.k`.)
    db.execute(&format!(
        "CREATE TABLE public.k (id int PRIMARY KEY, name text); GRANT INSERT ON public.k TO {role}; \
         INSERT INTO public.k SELECT g, 'held' FROM generate_series(1, 20000) g"
    ));
    let export: String = (1..=30_000).map(|i| format!("{i},new {i}\n")).collect();
    let export = db.file("export.csv", export.as_bytes());
    let args = ["load", export.to_str().unwrap(), "--table", "k", "--on-conflict-do-nothing", "--chunk-size", "16KiB"];
    let run = sluice_as(&conninfo, &args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("loaded 10,000 rows, skipped 20,000 duplicate keys"), "{}", run.stdout);
    assert_eq!(
        db.scalar("SELECT count(*) FILTER (WHERE name = 'held') || ' ' || count(*) FROM public.k"),
        "20000 30000"
    );
    // Replacing the rows needs UPDATE on the columns set, which the role
    // is told to ask for (the server said `permission denied for table k`).
    db.execute(&format!("GRANT SELECT ON public.k TO {role}"));
    let replace = ["load", export.to_str().unwrap(), "--table", "k", "--on-conflict-do-update", "--load-again"];
    let run = sluice_as(&conninfo, &replace);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let ask = format!("ask the table's owner to run GRANT SELECT, UPDATE (\"name\") ON \"public\".\"k\" TO \"{role}\"");
    assert!(run.stderr.contains(&ask), "{}", run.stderr);
    db.execute(&format!("GRANT UPDATE (name) ON public.k TO {role}"));
    // The file the do-nothing job loaded is left out unless asked, saying
    // that job kept records out and what loading it again does.
    let run = sluice_as(&conninfo, &replace[..replace.len() - 1]);
    assert_eq!(
        (run.code, db.scalar("SELECT count(*) FILTER (WHERE name = 'held') FROM public.k")),
        (0, "20000".into())
    );
    assert!(
        run.stderr.contains("(10,000 rows of 30,000 records (the others skipped or rejected then), finished at"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("pass --load-again to load it a second time, which with --on-conflict-do-update replaces the rows their records' keys hold"), "{}", run.stderr);
    let run = sluice_as(&conninfo, &replace);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(db.scalar("SELECT count(*) FILTER (WHERE name LIKE 'new %') FROM public.k"), "30000");
    // Nor temporary objects: the check of many suspects' values together
    // (a function in the session's temporary schema) cannot run, and each
    // suspect is copied alone instead.
    db.execute(&format!("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC", db.name));
    let many: String =
        (0..40).map(|i| if i % 4 == 0 { format!("x{i},bad\n") } else { format!("{},ok\n", 9100 + i) }).collect();
    let many = db.file("many.csv", many.as_bytes());
    let run = load(many.to_str().unwrap());
    assert_eq!(run.code, 1, "ten rejects: {}", run.stderr);
    assert_eq!(db.count("t"), rows + 2 + 30);
    assert_eq!(db.scalar("SELECT count(*) FROM sluice.rejects"), "11");
}

/// A ledger another role made (an administrator's first load) is out of
/// a loading role's reach until it is granted: the role is told the two
/// GRANTs, not `permission denied for schema sluice` (`sluice status`,
/// which only reads it, the SELECT it needs), and loads once they are run
/// as written.
#[test]
fn a_ledger_another_role_made_is_named_with_the_grants_it_needs() {
    let db = TestDb::new();
    let file = table_and_file(&db);
    db.load(&[&file, "--table", "t"]).assert_ok();
    let role = format!("late_{}", db.name);
    db.execute(&format!("CREATE ROLE {role} LOGIN; GRANT INSERT ON t TO {role}"));
    let conninfo = format!("{} user={role}", db.conninfo());
    let more = db.file("more.csv", b"4,d\n5,e\n");
    let load = || sluice_as(&conninfo, &["load", more.to_str().unwrap(), "--table", "t"]);
    let run = load();
    assert_eq!(run.code, 4, "{}", run.stderr);
    let grants = format!(
        "GRANT USAGE ON SCHEMA sluice TO \"{role}\"; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA \
         sluice TO \"{role}\""
    );
    assert!(run.stderr.contains(&format!("role \"{role}\" may not use it; ask")), "{}", run.stderr);
    assert!(run.stderr.contains(&grants), "{}", run.stderr);
    let status = || sluice_as(&conninfo, &["status"]);
    let refused = status();
    let reads = format!("GRANT USAGE ON SCHEMA sluice TO \"{role}\"; GRANT SELECT ON ALL TABLES IN SCHEMA sluice");
    assert!(refused.code == 4 && refused.stderr.contains(&reads), "{}", refused.stderr);
    db.execute(&format!(
        "GRANT USAGE ON SCHEMA sluice TO \"{role}\"; GRANT SELECT ON ALL TABLES IN SCHEMA sluice TO \"{role}\""
    ));
    assert_eq!(status().code, 0, "reading is enough for status: {}", status().stderr);
    assert!(load().stderr.contains(&grants), "a load needs more");
    db.execute(&grants);
    assert_eq!(load().code, 0);
    assert_eq!(db.count("t"), 5);
}

/// COPY refuses a table whose row-level security applies to the role; sluice
/// says so before anything is done, --truncate included.
#[test]
fn row_level_security_is_refused_before_anything_is_done() {
    let db = TestDb::new();
    let file = table_and_file(&db);
    db.load(&[&file, "--table", "t"]).assert_ok();
    let role = format!("ruled_{}", db.name);
    db.execute(&format!(
        "CREATE ROLE {role} LOGIN; GRANT INSERT, TRUNCATE ON t TO {role}; GRANT USAGE ON SCHEMA sluice TO {role}; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA sluice TO {role}; \
         ALTER TABLE t ENABLE ROW LEVEL SECURITY; CREATE POLICY mine ON t USING (name = current_user)"
    ));
    let conninfo = format!("{} user={role}", db.conninfo());
    let more = db.file("more.csv", b"4,d\n5,e\n");
    let run = sluice_as(&conninfo, &["load", more.to_str().unwrap(), "--table", "t", "--truncate"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let says = format!("public.t has row-level security that applies to role \"{role}\", and COPY");
    assert!(run.stderr.contains(&says) && run.stderr.contains("DISABLE ROW LEVEL SECURITY"), "{}", run.stderr);
    assert_eq!(db.count("t"), 3, "not truncated");
}

/// TLS through libpq: `sslmode=require` connects encrypted, `verify-full`
/// accepts the server's certificate from `sslrootcert` and refuses one from
/// another authority with one clear line and exit code 4.
/// sluice's sessions run read committed whatever the database's default:
/// the ledger is made for it, and under a default of serializable every
/// row was checked against predicate locks (1 M rows: 2.01 s against
/// 0.85 s, medians of 3). A CHECK that reads the isolation level refuses
/// rows loaded otherwise. And with standard strings, whatever the
/// database's default: a CHECK's text, read when CHECKs were deferred to
/// build it again, held `'a\b'`, which the server warned of.
#[test]
fn sessions_are_as_sluice_expects_whatever_the_database_defaults() {
    let db = TestDb::new();
    db.execute(
        "CREATE FUNCTION read_committed() RETURNS boolean IMMUTABLE LANGUAGE sql \
           AS $$SELECT current_setting('transaction_isolation') = 'read committed'$$; \
         CREATE TABLE t (id int PRIMARY KEY, v text, CHECK (read_committed() AND v <> 'a\\b'))",
    );
    let check = "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 't'::regclass AND contype = 'c'";
    let before = db.scalar(check);
    db.execute(&format!("ALTER DATABASE {} SET default_transaction_isolation = 'serializable'", db.name));
    db.execute(&format!("ALTER DATABASE {} SET standard_conforming_strings = off", db.name));
    let mut data: String = (0..20_000).map(|i| format!("{i}\tv{i}\n")).collect();
    data.push_str("-1\ta\\\\b\n");
    let file = db.file("t.tsv", data.as_bytes());
    let rejects = db.dir.path().join("t.rejects");
    let args = ["--table", "t", "--chunk-size", "16KiB", "--workers", "3", "--rejects", rejects.to_str().unwrap()];
    let run = db.load(&[&[file.to_str().unwrap()], &args[..]].concat());
    db.execute(&format!("ALTER DATABASE {} RESET ALL", db.name));
    assert_eq!(run.code, 1, "{}", run.output());
    assert!(run.output().contains("1 deferred index/constraint rebuilt"), "the key: {}", run.output());
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    assert_eq!(crate::util::rejected_lines(&rejects).into_iter().map(|(_, line)| line).collect::<Vec<_>>(), [20_001]);
    assert_eq!(db.count("t"), 20_000);
    assert_eq!(db.scalar(check), before);
}

#[test]
fn tls_sslmodes_are_honoured() {
    use sluice::local_pg::{LocalOptions, LocalPostgres};
    let opts = LocalOptions { tcp: true, tls: true, password: Some(PASSWORD.into()), ..LocalOptions::default() };
    let server = LocalPostgres::start(&opts).unwrap();
    let base = format!("host=127.0.0.1 port={} user=sluice password={PASSWORD} dbname=postgres", server.port);
    let admin = sluice::sink::postgres::PgTarget::new(Some(&server.conninfo("postgres"))).connect().unwrap();
    admin.execute("CREATE TABLE t (id int, name text)").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.csv");
    std::fs::write(&file, "1,a\n2,b\n").unwrap();
    let load = |conn: &str| {
        let mut cmd = sluice_command();
        cmd.args(["load", file.to_str().unwrap(), "--table", "t", "--restart", "--db", conn]);
        run_command(cmd)
    };
    let require = format!("{base} sslmode=require");
    load(&require).assert_ok();
    let ssl = sluice::sink::postgres::PgTarget::new(Some(&require)).connect().unwrap();
    let used = ssl.query("SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).unwrap();
    assert_eq!(used[0][0].as_deref(), Some("true"), "the session is encrypted");
    let trusted = format!("{base} sslmode=verify-full sslrootcert={}", server.tls_cert().display());
    load(&trusted).assert_ok();
    let other_ca = dir.path().join("other.crt");
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other"])
        .arg("-keyout")
        .arg(dir.path().join("other.key"))
        .arg("-out")
        .arg(&other_ca)
        .output()
        .unwrap();
    assert!(made.status.success());
    let run = load(&format!("{base} sslmode=verify-full sslrootcert={}", other_ca.display()));
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("certificate verify failed"), "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(!run.output().contains(PASSWORD), "{}", run.output());
    server.stop();
}

/// A server on this machine named by its TCP address is loaded through its
/// Unix socket (the kernel's TCP work competes with the server for the same
/// cores); `--keep-tcp` keeps TCP. A statement trigger records each COPY's
/// client address, so the test sees where the rows really came from.
#[test]
fn a_local_server_named_by_its_tcp_address_is_loaded_through_its_socket() {
    let db = TestDb::new();
    db.execute(
        "CREATE TABLE t (id int, name text); CREATE TABLE seen (addr text); \
         CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS \
         $$BEGIN INSERT INTO seen VALUES (coalesce(host(inet_client_addr()), 'socket')); RETURN NULL; END$$; \
         CREATE TRIGGER note BEFORE INSERT ON t FOR EACH STATEMENT EXECUTE FUNCTION note()",
    );
    let rows: String = (0..2000).map(|i| format!("{i},name {i}\n")).collect();
    let file = db.file("d.csv", rows.as_bytes());
    let report = db.dir.path().join("r.json");
    let url = db.url_with_password(PASSWORD);
    let load = |extra: &[&str]| {
        let mut args = vec!["load", file.to_str().unwrap(), "--table", "t", "--db", &url, "--chunk-size", "4KiB"];
        args.extend(["--workers", "2", "--restart", "--truncate", "--report", report.to_str().unwrap()]);
        args.extend(extra);
        let run = crate::util::sluice(&args);
        run.assert_ok();
        let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let addresses = db.scalar("SELECT string_agg(DISTINCT addr, ',') FROM seen");
        let copies: u64 = db.scalar("SELECT count(*) FROM seen").parse().unwrap();
        db.execute("TRUNCATE seen");
        (run, summary["summary"]["connection"].clone(), addresses, copies)
    };
    let (run, connection, addresses, copies) = load(&[]);
    assert_eq!(addresses, "socket", "every COPY came through the socket");
    assert!(copies > 2, "{copies} COPYs");
    assert_eq!(connection["via"], "unix socket");
    let dir = server().socket_dir().display().to_string();
    assert_eq!(connection["socket_dir"], dir.as_str());
    assert!(run.stdout.contains(&format!("over the Unix socket in {dir}")), "{}", run.stdout);
    assert_eq!(db.count("t"), 2000);
    let (run, connection, addresses, _) = load(&["--keep-tcp"]);
    assert_eq!(addresses, "127.0.0.1", "--keep-tcp: every COPY came over TCP");
    assert_eq!(connection["via"], "tcp");
    assert_eq!(connection["why_tcp"], "--keep-tcp");
    assert!(!run.stdout.contains("Unix socket"), "{}", run.stdout);
    assert!(!run.output().contains(PASSWORD), "{}", run.output());
}

/// A socket for the server's port that leads to another server (here a
/// link in a folder sluice looks in when the role may not read
/// `unix_socket_directories`) is not used: the load goes over TCP, into the
/// server the address names, and the report says why.
#[test]
fn a_socket_that_leads_to_another_server_is_not_used() {
    use sluice::local_pg::{LocalOptions, LocalPostgres};
    let named =
        LocalPostgres::start(&LocalOptions { tcp: true, password: Some(PASSWORD.into()), ..Default::default() })
            .unwrap();
    let other = LocalPostgres::start(&LocalOptions::default()).unwrap();
    let link =
        std::path::Path::new(sluice::sink::socket::USUAL_SOCKET_DIRS[1]).join(format!(".s.PGSQL.{}", named.port));
    assert!(!link.exists(), "{} is taken", link.display());
    std::os::unix::fs::symlink(other.socket_dir().join(format!(".s.PGSQL.{}", other.port)), &link).unwrap();
    struct Remove<'a>(&'a std::path::Path);
    impl Drop for Remove<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(self.0);
        }
    }
    let _remove = Remove(&link);
    // The same role, database and table on both servers.
    let setup = "CREATE ROLE plain LOGIN PASSWORD 'plain-pw'; CREATE DATABASE d OWNER plain";
    for server in [&named, &other] {
        let admin = sluice::sink::postgres::PgTarget::new(Some(&server.conninfo("postgres"))).connect().unwrap();
        for statement in setup.split("; ") {
            admin.execute(statement).unwrap();
        }
        let owner = format!("host={} port={} user=plain dbname=d", server.socket_dir().display(), server.port);
        let session = sluice::sink::postgres::PgTarget::new(Some(&owner)).connect().unwrap();
        session.execute("CREATE TABLE t (id int, name text)").unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.csv");
    std::fs::write(&file, "1,a\n2,b\n3,c\n").unwrap();
    let report = dir.path().join("r.json");
    let url = format!("postgresql://plain:plain-pw@127.0.0.1:{}/d", named.port);
    let mut cmd = sluice_command();
    cmd.args(["load", file.to_str().unwrap(), "--table", "t", "--db", &url, "--report", report.to_str().unwrap()]);
    let run = run_command(cmd);
    let count = |server: &LocalPostgres| {
        let session = sluice::sink::postgres::PgTarget::new(Some(&server.conninfo("d"))).connect().unwrap();
        session.query("SELECT count(*) FROM t", &[]).unwrap()[0][0].clone().unwrap()
    };
    let (loaded, elsewhere) = (count(&named), count(&other));
    named.stop();
    other.stop();
    run.assert_ok();
    assert_eq!((loaded.as_str(), elsewhere.as_str()), ("3", "0"), "the rows went to the server --db names");
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let connection = &summary["summary"]["connection"];
    assert_eq!(connection["via"], "tcp");
    let why = connection["why_tcp"].as_str().unwrap();
    assert!(why.contains("leads to another server"), "{why}");
}

/// PgBouncer in front of the test server, pooling in transaction mode, on a
/// loopback port of its own; stopped when dropped. It refuses to run as
/// root, so as root it runs as `nobody`, as the server does.
struct Pooler {
    child: std::process::Child,
    port: u16,
    _dir: std::path::PathBuf,
}

impl Pooler {
    fn in_transaction_mode(db: &TestDb) -> Pooler {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::process::CommandExt;
        let socket_dir = server().socket_dir();
        let owner = std::fs::metadata(socket_dir).unwrap();
        let dir = socket_dir.join(format!("pooler_{}", db.name));
        std::fs::create_dir(&dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let user = sluice::local_pg::SUPERUSER;
        let ini = format!(
            "[databases]\n{name} = host={host} port={pg} dbname={name} user={user}\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {users}\npool_mode = transaction\n",
            name = db.name,
            host = socket_dir.display(),
            pg = server().port,
            users = dir.join("users.txt").display(),
        );
        for (file, text) in [("pgbouncer.ini", ini), ("users.txt", format!("\"{user}\" \"\"\n"))] {
            std::fs::write(dir.join(file), text).unwrap();
            std::os::unix::fs::chown(dir.join(file), Some(owner.uid()), Some(owner.gid())).unwrap();
        }
        let program = ["/usr/sbin/pgbouncer", "pgbouncer"].into_iter().find(|p| std::path::Path::new(p).exists());
        let mut command = std::process::Command::new(program.unwrap_or("pgbouncer"));
        command.arg(dir.join("pgbouncer.ini")).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            command.uid(owner.uid()).gid(owner.gid());
        }
        let child = command.spawn().expect("pgbouncer (scripts/setup.sh installs it)");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "pgbouncer did not listen on port {port}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Pooler { child, port, _dir: dir }
    }

    fn url(&self, db: &TestDb) -> String {
        format!("postgresql://{}@127.0.0.1:{}/{}", sluice::local_pg::SUPERUSER, self.port, db.name)
    }
}

impl Drop for Pooler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Through a pooler in transaction mode, a load's session locks stay on
/// the pooled server connections after it ends, the lock that says a job
/// is running among them: a reload of the finished job with `--restart`
/// was refused as running another load. A finished job runs nowhere; the
/// job loads through the pooler, again with `--restart`, and `status` says
/// it is finished, not running.
#[test]
fn through_a_pooler_in_transaction_mode_a_finished_job_is_not_running() {
    let db = TestDb::new();
    let file = table_and_file(&db);
    let pooler = Pooler::in_transaction_mode(&db);
    let url = pooler.url(&db);
    let load = ["load", file.as_str(), "--table", "t", "--job", "pooled"];
    sluice_as(&url, &load).assert_ok();
    // In this database: the tests share a server, and another test's load
    // holds such a lock while it runs.
    let lingering = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 \
                     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
    assert_ne!(db.scalar(lingering), "0", "the pooled server connections keep the load's lock");
    sluice_as(&url, &[&load[..], &["--restart"]].concat()).assert_ok();
    assert_eq!(db.count("t"), 6, "--restart loads again; what the job committed stays");
    // Asked directly, not through the pooler, whose server connection could
    // be one that holds the lock (a session's own locks are not counted).
    let status = sluice_as(&db.conninfo(), &["status", "--job", "pooled", "--json"]);
    let job: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!((job[0]["state"].as_str(), job[0]["running"].as_bool()), (Some("finished"), Some(false)));
}

/// A role that may only insert does not analyze a table autovacuum leaves
/// alone (the server would skip it with a warning): the load says who can,
/// and what to run.
#[test]
fn a_role_that_may_not_analyze_the_table_is_told_who_can() {
    let db = TestDb::new();
    let file = table_and_file(&db);
    let role = format!("inserter_{}", db.name);
    db.execute(&format!(
        "ALTER TABLE t SET (autovacuum_enabled = off); CREATE ROLE {role} LOGIN; GRANT INSERT ON t TO {role}; \
         CREATE SCHEMA sluice AUTHORIZATION {role}"
    ));
    let run = sluice_as(&format!("{} user={role}", db.conninfo()), &["load", &file, "--table", "public.t"]);
    assert_eq!((run.code, db.count("t")), (0, 3), "{}", run.stderr);
    let said = "not analyzed (autovacuum is off for the table): this role neither owns public.t nor may analyze it; \
                until its owner runs ANALYZE \"public\".\"t\" the planner guesses the new rows' counts";
    assert!(run.stderr.contains(said), "{}", run.stderr);
    assert!(!run.stderr.contains("skipping"), "the server's own warning: {}", run.stderr);
    // Its owner's load analyzes it.
    let more = db.file("more.csv", b"4,d\n5,e\n6,f\n");
    let run = db.load(&[more.to_str().unwrap(), "--table", "public.t"]);
    assert!(run.stdout.contains(" s (autovacuum is off for the table)"), "{}", run.stdout);
    assert_eq!(db.scalar("SELECT reltuples::int FROM pg_class WHERE oid = 'public.t'::regclass"), "6");
}
