package aggregate

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/expr"
)

// Definition is what an aggregate computes. It is persisted as JSON in the
// owning namespace and shown by the admin API.
type Definition struct {
	Name    string `json:"name"`
	Table   string `json:"table"`
	GroupBy string `json:"group_by"`
	// Where, if set, is a FilterExpression an image must satisfy to be
	// counted; Names and Values are its ExpressionAttributeNames and
	// ExpressionAttributeValues.
	Where  string                `json:"where,omitempty"`
	Names  map[string]string     `json:"names,omitempty"`
	Values map[string]attr.Value `json:"values,omitempty"`
	// Count reports the number of items of each group.
	Count bool `json:"count"`
	// Sum lists the number attributes summed per group.
	Sum []string `json:"sum,omitempty"`
	// GroupAfter, if set, makes only the part of a string group value
	// after its last occurrence of GroupAfter name the group (a value
	// without it: the whole value). Single-table keys such as
	// "TENANT#1|OPEN" group as "OPEN" with "|".
	GroupAfter string `json:"group_after,omitempty"`
	// Item, if set, materialises every group as an item of the table: the
	// key attributes and their string templates, in which "{group}" is
	// the group value and "{tenant}" the tenant id. The item holds
	// "count" (with Count) and "sum_<attr>" for each summed attribute: a
	// number, or the exact decimal as a string when the sum needs more
	// than DynamoDB's 38 digits.
	Item map[string]string `json:"item,omitempty"`
	// Fleet marks a tenant's copy of an aggregate the operator defined
	// for every tenant of a shared table: only the operator deletes it.
	Fleet bool `json:"fleet,omitempty"`
	// Created is when the aggregate was created.
	Created time.Time `json:"created"`
}

// MaxSums bounds the attributes one aggregate sums.
const MaxSums = 20

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Validate checks d as given by a client, compiling its where
// expression, and returns a Validation error saying what is wrong.
func (d *Definition) Validate() error {
	if !nameRE.MatchString(d.Name) {
		return apierr.Validationf("aggregate name must be 1 to 128 characters of A-Z, a-z, 0-9, '_', '.', '-'")
	}
	if d.Table == "" {
		return apierr.Validationf("an aggregate needs a table")
	}
	if d.GroupBy == "" {
		return apierr.Validationf("an aggregate needs a group-by attribute")
	}
	if !d.Count && len(d.Sum) == 0 {
		return apierr.Validationf("an aggregate needs --count or at least one --sum attribute")
	}
	if len(d.Sum) > MaxSums {
		return apierr.Validationf("an aggregate sums at most %d attributes", MaxSums)
	}
	seen := map[string]bool{}
	for _, a := range d.Sum {
		if a == "" || seen[a] {
			return apierr.Validationf("sum attributes must be non-empty and distinct")
		}
		seen[a] = true
	}
	if d.Where == "" && (len(d.Names) > 0 || len(d.Values) > 0) {
		return apierr.Validationf("expression attribute names or values given without a where expression")
	}
	if len(d.Item) > 0 {
		if len(d.Item) > 2 {
			return apierr.Validationf("an item template names the partition key and at most the sort key")
		}
		grouped := false
		for k, v := range d.Item {
			if k == "" || v == "" {
				return apierr.Validationf("item template attributes and values must not be empty")
			}
			if strings.Contains(v, "{group}") {
				grouped = true
			}
			if err := checkTemplate(v); err != nil {
				return err
			}
		}
		if !grouped {
			return apierr.Validationf("an item template must contain {group} in a key value, so that each group has its own item")
		}
	}
	_, err := d.compile()
	return err
}

// checkTemplate refuses placeholders other than {group} and {tenant}.
func checkTemplate(v string) error {
	rest := strings.NewReplacer("{group}", "", "{tenant}", "").Replace(v)
	if strings.ContainsAny(rest, "{}") {
		return apierr.Validationf("item template %q: only {group} and {tenant} may appear in braces", apierr.Clip(v))
	}
	if strings.Count(v, "{group}") > 1 {
		return apierr.Validationf("item template %q: {group} may appear once", apierr.Clip(v))
	}
	return nil
}

// compiled is a Definition ready to fold changes.
type compiled struct {
	def   *Definition
	where expr.Condition // nil: every image with the group attribute counts
}

func (d *Definition) compile() (*compiled, error) {
	c := &compiled{def: d}
	if d.Where != "" {
		p := expr.NewParams(d.Names, d.Values)
		if err := p.Validate(); err != nil {
			return nil, err
		}
		w, err := p.Filter(d.Where)
		if err != nil {
			return nil, err
		}
		if err := p.CheckUnused(); err != nil {
			return nil, err
		}
		c.where = w
	}
	return c, nil
}

func (d *Definition) marshal() []byte {
	b, err := json.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("aggregate: marshal definition: %v", err))
	}
	return b
}

func unmarshalDefinition(b []byte) (*Definition, error) {
	d := new(Definition)
	if err := json.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("aggregate: decode definition: %w", err)
	}
	return d, nil
}

// sortedSums returns d.Sum sorted (for stable output).
func (d *Definition) sortedSums() []string {
	s := append([]string(nil), d.Sum...)
	sort.Strings(s)
	return s
}
