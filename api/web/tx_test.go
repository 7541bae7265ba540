package web_test

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"gorm.io/gorm"

	"github.com/business-suite/suite/api/web"
	"github.com/business-suite/suite/internal/database"
	"github.com/business-suite/suite/internal/database/commithook"
	"github.com/business-suite/suite/models"
	"github.com/business-suite/suite/models/dbtest"
)

// txApp serves handlers that write notes (a table of the test's own) in
// the request's transaction, behind Transactional with opts.
func txApp(t *testing.T, db *gorm.DB, opts web.RequestOptions) (*fiber.App, func() []string) {
	t.Helper()
	if err := db.Exec("DROP TABLE IF EXISTS tx_notes").Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("CREATE TABLE tx_notes (id INTEGER PRIMARY KEY, note TEXT NOT NULL UNIQUE)").Error; err != nil {
		t.Fatal(err)
	}
	var seq int
	write := func(tx *gorm.DB, note string) error {
		seq++
		err := tx.Exec("INSERT INTO tx_notes (id, note) VALUES (?, ?)", seq, note).Error
		if database.IsUniqueViolation(err) {
			return web.NewProblem(409, "taken", "The note exists.")
		}
		return err
	}
	app := newApp()
	app.Use(web.Transactional(db, opts))
	// /notes writes the notes named in the query, one statement each, then
	// answers as ?answer= says.
	handler := func(c *fiber.Ctx) error {
		for note := range strings.SplitSeq(c.Query("notes"), ",") {
			if err := write(web.Tx(c), note); err != nil {
				return err
			}
		}
		switch c.Query("answer") {
		case "refuse":
			return models.Invalid(models.FieldError{Field: "note", Code: "invalid", Message: "No."})
		case "refuse-keeping":
			web.KeepOnRefusal(c)
			return models.Err(models.ErrUnauthorized, "revoked", "Revoked, and it stays so.")
		case "fail":
			return errors.New("the handler failed")
		}
		web.AfterCommit(c, func() { c.Set("X-After-Commit", "ran") })
		return c.Status(201).JSON(fiber.Map{"notes": c.Query("notes")})
	}
	app.Post("/notes", handler)
	app.Delete("/notes", handler)
	// /one writes its notes through OneStatementTx.
	app.Post("/one", func(c *fiber.Ctx) error {
		tx := web.OneStatementTx(c)
		for note := range strings.SplitSeq(c.Query("notes"), ",") {
			if err := write(tx, note); err != nil {
				return err
			}
		}
		return c.SendStatus(201)
	})
	// /once records its note with one statement that writes nothing when
	// the note exists (as the lead intake records a submission); then it
	// records the resend in the request's transaction, as the intake's
	// resubmission does.
	app.Post("/once", func(c *fiber.Ctx) error {
		seq++
		res := web.OneStatementTx(c).Exec("INSERT INTO tx_notes (id, note) VALUES (?, ?) ON CONFLICT DO NOTHING", seq, c.Query("note"))
		if res.Error != nil || res.RowsAffected == 1 {
			return cmp.Or(res.Error, c.SendStatus(201))
		}
		if err := write(web.Tx(c), "resent "+c.Query("note")); err != nil {
			return err
		}
		if c.Query("answer") == "fail" {
			return errors.New("the resend failed")
		}
		return c.SendStatus(200)
	})
	// /savepoint writes a note, then another in a nested transaction
	// that it rolls back.
	app.Post("/savepoint", func(c *fiber.Ctx) error {
		tx := web.Tx(c)
		if err := write(tx, "outer"); err != nil {
			return err
		}
		err := tx.Transaction(func(inner *gorm.DB) error {
			if err := write(inner, "inner"); err != nil {
				return err
			}
			return errors.New("roll the savepoint back")
		})
		if err == nil {
			return errors.New("the nested transaction did not fail")
		}
		return c.SendStatus(201)
	})
	app.Get("/notes", func(c *fiber.Ctx) error {
		web.Tx(c) // a bug: a GET has no transaction
		return nil
	})
	notes := func() []string {
		var out []string
		if err := db.Raw("SELECT note FROM tx_notes ORDER BY id").Scan(&out).Error; err != nil {
			t.Fatal(err)
		}
		return out
	}
	return app, notes
}

// keyings runs fn as a request without an Idempotency-Key and with a fresh
// one: the transaction behaves the same either way.
func keyings(t *testing.T, fn func(t *testing.T, key []string)) {
	for i, keyed := range []bool{false, true} {
		name := "plain"
		var key []string
		if keyed {
			name, key = "keyed", []string{web.HeaderIdempotencyKey, fmt.Sprint("key-", i)}
		}
		t.Run(name, func(t *testing.T) { fn(t, key) })
	}
}

// A mutating request's writes commit together after an answer below 400,
// and none of them remains after a refusal, a failure, or a statement that
// fails after others succeeded — on both dialects, keyed or not.
func TestRequestWritesCommitOrRollBackTogether(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		keyings(t, func(t *testing.T, key []string) {
			app, notes := txApp(t, db, web.RequestOptions{})
			r := send(t, app, "POST", "/notes?notes=a,b", "", key...)
			if r.status != 201 || r.header.Get("X-After-Commit") != "ran" || fmt.Sprint(notes()) != "[a b]" {
				t.Fatalf("a successful request: %d %s, after-commit %q, notes %v", r.status, r.body, r.header.Get("X-After-Commit"), notes())
			}
			for _, tc := range []struct{ query, want string }{
				{"notes=c,d&answer=refuse", "422"},
				{"notes=c,d&answer=fail", "500"},
				{"notes=c,a", "409"}, // the second statement breaks the unique index
			} {
				r := send(t, app, "POST", "/notes?"+tc.query, "", retryKey(key, tc.query)...)
				if fmt.Sprint(r.status) != tc.want || r.header.Get("X-After-Commit") != "" {
					t.Fatalf("%s: %d %s, want %s with nothing run after a commit", tc.query, r.status, r.body, tc.want)
				}
				if got := fmt.Sprint(notes()); got != "[a b]" {
					t.Fatalf("%s left %s behind", tc.query, got)
				}
			}
			r = send(t, app, "POST", "/notes?notes=e&answer=refuse-keeping", "", retryKey(key, "keep")...)
			if r.status != 401 || fmt.Sprint(notes()) != "[a b e]" {
				t.Fatalf("a refusal that keeps its writes: %d %s, notes %v", r.status, r.body, notes())
			}
			if r := send(t, app, "DELETE", "/notes?notes=f&answer=fail", ""); r.status != 500 || fmt.Sprint(notes()) != "[a b e]" {
				t.Fatalf("a failed DELETE: %d, notes %v", r.status, notes())
			}
		})
	})
}

// retryKey is key for another request than the one key was first sent with.
func retryKey(key []string, suffix string) []string {
	if key == nil {
		return nil
	}
	return []string{key[0], key[1] + "-" + suffix}
}

// A statement that fails last in the transaction, just before its COMMIT
// (a commithook on the test's own handle runs it there), leaves nothing of
// the request: the COMMIT fails and rolls everything back. Whether a COMMIT
// that failed landed is unknown to the API, so a keyed request's key stays
// in flight: its retry is a 409.
func TestALastStatementThatFailsLeavesNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		keyings(t, func(t *testing.T, key []string) {
			failing := commithook.Wrap(db, func(tx *gorm.DB) error {
				return tx.Exec("INSERT INTO tx_notes (id, note) VALUES (1000, NULL)").Error // NOT NULL
			})
			app, notes := txApp(t, failing, web.RequestOptions{})
			if r := send(t, app, "POST", "/notes?notes=a,b", "", key...); r.status != 500 || len(notes()) != 0 {
				t.Fatalf("%d %s, notes %v", r.status, r.body, notes())
			}
			if key != nil {
				if r := send(t, app, "POST", "/notes?notes=a,b", "", key...); r.status != 409 || !strings.Contains(r.body, "idempotency_key_in_flight") {
					t.Fatalf("the retry: %d %s, want the key in flight", r.status, r.body)
				}
			}
		})
	})
}

// A keyed request's stored answer is the last statement before its COMMIT;
// when it fails, nothing of the request remains and, nothing having been
// committed, the key is released: the retry runs again.
func TestAStoredAnswerThatFailsReleasesTheKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		app, notes := txApp(t, db, web.RequestOptions{})
		// The answer is stored as an UPDATE of the key's row in the
		// request's transaction; the claim and its release run on the pool.
		failStored := func(tx *gorm.DB) {
			if _, inTx := tx.Statement.ConnPool.(gorm.TxCommitter); inTx && tx.Statement.Table == "idempotency_keys" {
				_ = tx.AddError(errors.New("storing the answer failed"))
			}
		}
		if err := db.Callback().Update().Before("gorm:update").Register("test:fail_stored_answer", failStored); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Callback().Update().Remove("test:fail_stored_answer") })
		for _, attempt := range []string{"first", "retry"} {
			r := send(t, app, "POST", "/notes?notes=a,b", "", web.HeaderIdempotencyKey, "k")
			if r.status != 500 || r.header.Get(web.HeaderIdempotentReplayed) != "" || len(notes()) != 0 {
				t.Fatalf("%s: %d %s, notes %v; want a 500 that leaves nothing", attempt, r.status, r.body, notes())
			}
		}
	})
}

// A rolled-back nested transaction is a savepoint: the request's other
// writes stay.
func TestNestedTransactionsAreSavepoints(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		keyings(t, func(t *testing.T, key []string) {
			app, notes := txApp(t, db, web.RequestOptions{})
			if r := send(t, app, "POST", "/savepoint", "", key...); r.status != 201 || fmt.Sprint(notes()) != "[outer]" {
				t.Fatalf("%d %s, notes %v", r.status, r.body, notes())
			}
		})
	})
}

// OneStatementTx runs one statement as its own transaction and refuses a
// second; with an Idempotency-Key it is the request's transaction.
func TestOneStatementTxRefusesASecondStatement(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		app, notes := txApp(t, db, web.RequestOptions{})
		if r := send(t, app, "POST", "/one?notes=a", ""); r.status != 201 || fmt.Sprint(notes()) != "[a]" {
			t.Fatalf("one statement: %d %s, notes %v", r.status, r.body, notes())
		}
		if r := send(t, app, "POST", "/one?notes=b,c", ""); r.status != 500 || fmt.Sprint(notes()) != "[a b]" {
			t.Fatalf("two statements: %d %s, notes %v; want a 500 after the first", r.status, r.body, notes())
		}
		if r := send(t, app, "POST", "/one?notes=d,e", "", web.HeaderIdempotencyKey, "k"); r.status != 201 || fmt.Sprint(notes()) != "[a b d e]" {
			t.Fatalf("keyed: %d %s, notes %v", r.status, r.body, notes())
		}
	})
}

// A request whose one statement wrote nothing goes on in its transaction,
// which commits (or rolls back) as any other.
func TestOneStatementThenTheTransaction(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		app, notes := txApp(t, db, web.RequestOptions{})
		if r := send(t, app, "POST", "/once?note=a", ""); r.status != 201 {
			t.Fatalf("first: %d %s", r.status, r.body)
		}
		if r := send(t, app, "POST", "/once?note=a&answer=fail", ""); r.status != 500 {
			t.Fatalf("a failed resend: %d %s", r.status, r.body)
		}
		if r := send(t, app, "POST", "/once?note=a", ""); r.status != 200 || fmt.Sprint(notes()) != "[a resent a]" {
			t.Fatalf("a resend: %d %s, notes %v", r.status, r.body, notes())
		}
	})
}

// A handler that takes a transaction where there is none is a bug, told
// as a 500, not a write outside any transaction.
func TestTxOutsideAMutatingRequestIsABug(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *gorm.DB) {
		app, _ := txApp(t, db, web.RequestOptions{})
		if r := send(t, app, "GET", "/notes", ""); r.status != 500 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	})
}
