package admin

// Aggregates: the admin endpoints over the aggregate service.
//
//	POST   /v1/tenants/{tenant}/aggregates                 create (client.CreateAggregateRequest)
//	GET    /v1/tenants/{tenant}/aggregates                 list
//	GET    /v1/tenants/{tenant}/aggregates/{name}          show, with the groups
//	DELETE /v1/tenants/{tenant}/aggregates/{name}          delete
//	POST   /v1/tenants/{tenant}/aggregates/{name}/rebuild  recompute from the table's items
//	POST   /v1/aggregates                                  define one for every tenant of a shared table (operator)
//	GET    /v1/aggregates                                  list those (operator)
//	DELETE /v1/aggregates/{name}                           delete one and every tenant's copy (operator)
//
// The operator or an admin key of the tenant; an admin key acts on its
// own environment, the operator on the tenant's live environment. Every
// change is audited in the tenant's log.

import (
	"encoding/json"
	"net/http"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/aggregate"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// ServeAggregates adds the aggregate endpoints over svc.
func (h *Handler) ServeAggregates(svc *aggregate.Service) {
	log := h.o.Audit
	record := func(r *http.Request, p tenancy.Principal, s tenancy.Scope, action, name string) error {
		ev := audit.Event{Actor: p.KeyID, Role: p.Role.String(), Action: action, Target: "aggregate " + name, Source: r.RemoteAddr}
		if _, err := log.Append(audit.WithSource(r.Context(), r.RemoteAddr), s, ev); err != nil {
			return apierr.Wrap(apierr.Internal, err, "auditing %s", action)
		}
		return nil
	}
	h.HandleTenant("POST /v1/tenants/{tenant}/aggregates", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, s tenancy.Scope) {
		d, err := decodeAggregate(r)
		if err != nil {
			WriteError(w, err)
			return
		}
		out, err := svc.Create(r.Context(), s, d)
		if err == nil {
			err = record(r, p, s, "CreateAggregate", d.Name)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusCreated, aggregateOut(out))
	})
	h.HandleTenant("GET /v1/tenants/{tenant}/aggregates", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, s tenancy.Scope) {
		list, err := svc.List(r.Context(), s)
		if err != nil {
			WriteError(w, err)
			return
		}
		out := client.AggregateList{Aggregates: []client.Aggregate{}}
		for _, in := range list {
			out.Aggregates = append(out.Aggregates, aggregateOut(in))
		}
		WriteJSON(w, http.StatusOK, out)
	})
	h.HandleTenant("GET /v1/tenants/{tenant}/aggregates/{name}", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, s tenancy.Scope) {
		in, err := svc.Show(r.Context(), s, r.PathValue("name"))
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, aggregateOut(in))
	})
	h.HandleTenant("DELETE /v1/tenants/{tenant}/aggregates/{name}", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, s tenancy.Scope) {
		name := r.PathValue("name")
		err := svc.Delete(r.Context(), s, name)
		if err == nil {
			err = record(r, p, s, "DeleteAggregate", name)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h.HandleTenant("POST /v1/tenants/{tenant}/aggregates/{name}/rebuild", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, s tenancy.Scope) {
		name := r.PathValue("name")
		out, err := svc.Rebuild(r.Context(), s, name)
		if err == nil {
			err = record(r, p, s, "RebuildAggregate", name)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusAccepted, aggregateOut(out))
	})
	h.HandleOperator("POST /v1/aggregates", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal) {
		d, err := decodeAggregate(r)
		if err != nil {
			WriteError(w, err)
			return
		}
		s, err := h.o.Guard.AdmitAdmin(p, tenancy.AdminOperator, "POST /v1/aggregates", tenancy.TenantID{})
		if err != nil {
			WriteError(w, err)
			return
		}
		out, err := svc.CreateFleet(r.Context(), s, d)
		if err == nil {
			err = h.recordOperator(r, p, "CreateAggregateForEveryTenant", "aggregate "+d.Name+" on "+d.Table)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusCreated, aggregateOut(aggregate.Info{Definition: out, State: "defined"}))
	})
	h.HandleOperator("GET /v1/aggregates", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal) {
		s, err := h.o.Guard.AdmitAdmin(p, tenancy.AdminOperator, "GET /v1/aggregates", tenancy.TenantID{})
		if err != nil {
			WriteError(w, err)
			return
		}
		defs, err := svc.Fleet(r.Context(), s)
		if err != nil {
			WriteError(w, err)
			return
		}
		out := client.AggregateList{Aggregates: []client.Aggregate{}}
		for _, d := range defs {
			out.Aggregates = append(out.Aggregates, aggregateOut(aggregate.Info{Definition: d, State: "defined"}))
		}
		WriteJSON(w, http.StatusOK, out)
	})
	h.HandleOperator("DELETE /v1/aggregates/{name}", func(w http.ResponseWriter, r *http.Request, p tenancy.Principal) {
		s, err := h.o.Guard.AdmitAdmin(p, tenancy.AdminOperator, "DELETE /v1/aggregates/{name}", tenancy.TenantID{})
		if err != nil {
			WriteError(w, err)
			return
		}
		name := r.PathValue("name")
		err = svc.DeleteFleet(r.Context(), s, name)
		if err == nil {
			err = h.recordOperator(r, p, "DeleteAggregateForEveryTenant", "aggregate "+name)
		}
		if err != nil {
			WriteError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// recordOperator appends an operator's action to the platform log.
func (h *Handler) recordOperator(r *http.Request, p tenancy.Principal, action, target string) error {
	s, err := h.o.Guard.AdmitAdmin(p, tenancy.AdminOperator, action, keyspace.Platform)
	if err != nil {
		return err
	}
	ev := audit.Event{Actor: p.KeyID, Role: p.Role.String(), Action: action, Target: target, Source: r.RemoteAddr}
	if _, err := h.o.Audit.Append(audit.WithSource(r.Context(), r.RemoteAddr), s, ev); err != nil {
		return apierr.Wrap(apierr.Internal, err, "auditing %s", action)
	}
	return nil
}

// decodeAggregate reads a client.CreateAggregateRequest body.
func decodeAggregate(r *http.Request) (aggregate.Definition, error) {
	var in client.CreateAggregateRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return aggregate.Definition{}, apierr.Validationf("malformed JSON body: %s", apierr.Clip(err.Error()))
	}
	d := aggregate.Definition{Name: in.Name, Table: in.Table, GroupBy: in.GroupBy, Where: in.Where, Names: in.Names,
		Count: in.Count, Sum: in.Sum, GroupAfter: in.GroupAfter, Item: in.Item}
	for k, raw := range in.Values {
		var v attr.Value
		if err := json.Unmarshal(raw, &v); err != nil {
			return aggregate.Definition{}, apierr.Validationf("expression attribute value %s: %s", apierr.Clip(k), apierr.Message(err))
		}
		if d.Values == nil {
			d.Values = map[string]attr.Value{}
		}
		d.Values[k] = v
	}
	return d, nil
}

func aggregateOut(in aggregate.Info) client.Aggregate {
	out := client.Aggregate{
		Name: in.Name, Table: in.Table, GroupBy: in.GroupBy, Where: in.Where, Names: in.Names, Count: in.Definition.Count,
		Sum: in.Sum, GroupAfter: in.GroupAfter, Item: in.Item, CreatedAt: in.Created,
		State: in.State, Cursor: in.Cursor, Applied: in.Applied, LagMillis: in.LagMillis, LastChange: in.LastChange,
		RebuiltAt: in.Rebuilt, Rebuilds: in.Rebuilds, Scanned: in.Scanned, Error: in.Error, Fleet: in.Fleet,
	}
	for k, v := range in.Values {
		b, _ := json.Marshal(v)
		if out.Values == nil {
			out.Values = map[string]json.RawMessage{}
		}
		out.Values[k] = b
	}
	if in.Groups != nil {
		out.Groups = map[string]client.AggregateGroup{}
		for k, g := range in.Groups {
			out.Groups[k] = client.AggregateGroup{Count: g.Count, Sum: g.Sum}
		}
	}
	return out
}
