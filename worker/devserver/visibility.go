package devserver

import (
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	persistencespb "go.temporal.io/server/api/persistence/v1"
	"google.golang.org/protobuf/proto"
)

// keptVisibilityIndexes are the indexes of Temporal's SQLite visibility
// table that serve the Web UI's default listing and its usual filters
// (workflow id and type, status, task queue, execution time). The indexes
// of the custom search attribute columns in use (OrgId and Kind are mapped
// to two of the Keyword columns) are kept too; see leanVisibility.
var keptVisibilityIndexes = map[string]bool{
	"default_idx": true, "by_execution_time": true, "by_workflow_id": true, "by_workflow_type": true,
	"by_status": true, "by_task_queue": true,
}

// leanVisibility drops the other indexes of the visibility table. The
// schema indexes every column a visibility query might filter on — 58
// indexes, each rewritten by every workflow start and close — which made
// recording a started workflow the embedded server's largest cost (20–29 %
// of the process's CPU while the lead intake drained). A filter on a column
// without an index still works; it scans the table, which a development
// server's retention keeps small. Dropping is idempotent and runs at every
// start, so a file made by an earlier version is trimmed too.
// aliases are the namespaces' search attributes (namespaceAliases).
func leanVisibility(db *sql.DB, aliases map[string]map[string]string) error {
	keep, err := searchAttributeIndexes(aliases)
	if err != nil {
		return err
	}
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND sql IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("list visibility indexes: %w", err)
	}
	var drop []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		if !keptVisibilityIndexes[name] && !keep[name] {
			drop = append(drop, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, name := range drop {
		if _, err := db.Exec(`DROP INDEX IF EXISTS "` + strings.ReplaceAll(name, `"`, `""`) + `"`); err != nil {
			return fmt.Errorf("drop visibility index %s: %w", name, err)
		}
	}
	return nil
}

// searchAttributeColumn is a custom search attribute column (Keyword01);
// its index is by_keyword_01.
var searchAttributeColumn = regexp.MustCompile(`^([A-Za-z]+)([0-9]+)$`)

// searchAttributeIndexes names the indexes of the columns that the
// namespaces' custom search attributes are mapped to (the mapping is
// stored in each namespace's record, chosen when it was created).
func searchAttributeIndexes(aliases map[string]map[string]string) (map[string]bool, error) {
	keep := map[string]bool{}
	for name, columns := range aliases {
		for column := range columns {
			m := searchAttributeColumn.FindStringSubmatch(column)
			if m == nil {
				return nil, fmt.Errorf("namespace %s: search attribute column %q", name, column)
			}
			keep["by_"+strings.ToLower(m[1])+"_"+m[2]] = true
		}
	}
	return keep, nil
}

// namespaceAliases reads every namespace's custom search attributes from
// its record: by namespace name, each column's alias (Keyword01 → OrgId).
func namespaceAliases(db *sql.DB) (map[string]map[string]string, error) {
	rows, err := db.Query(`SELECT name, data, data_encoding FROM namespaces`)
	if err != nil {
		return nil, fmt.Errorf("read namespaces: %w", err)
	}
	defer rows.Close()
	aliases := map[string]map[string]string{}
	for rows.Next() {
		var name, encoding string
		var data []byte
		if err := rows.Scan(&name, &data, &encoding); err != nil {
			return nil, err
		}
		var detail persistencespb.NamespaceDetail
		if !strings.EqualFold(encoding, "Proto3") {
			return nil, fmt.Errorf("namespace %s: unknown encoding %q", name, encoding)
		}
		if err := proto.Unmarshal(data, &detail); err != nil {
			return nil, fmt.Errorf("namespace %s: %w", name, err)
		}
		aliases[name] = detail.GetConfig().GetCustomSearchAttributeAliases()
	}
	return aliases, rows.Err()
}

// prepareFile readies an existing data file for the server: it reads the
// namespaces' search attributes and trims the visibility indexes
// (leanVisibility), and returns what it read.
func prepareFile(dbPath string) (aliases map[string]map[string]string, err error) {
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if aliases, err = namespaceAliases(db); err != nil {
		return nil, err
	}
	return aliases, leanVisibility(db, aliases)
}

// hasSearchAttributes tells whether a namespace's search attributes
// (column → alias) include every one of names.
func hasSearchAttributes(aliases map[string]string, names map[string]enumspb.IndexedValueType) bool {
	have := map[string]bool{}
	for _, alias := range aliases {
		have[alias] = true
	}
	for name := range names {
		if !have[name] {
			return false
		}
	}
	return true
}
