package telemetry

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
)

// sqlPlugin is GORM's OpenTelemetry hook kept to what promptd needs
// (gorm.io/plugin/opentelemetry links the ClickHouse and PostgreSQL
// drivers into the binary to name the server): one client span per
// statement with db.system.name, db.operation.name and db.query.text, the
// statement with its placeholders and never the values bound to them.
// Statements outside a traced request start no trace of their own unless
// the sampler says so; statements of a request the sampler dropped start
// no span (a parent-based sampler would drop it anyway).
type sqlPlugin struct{ system string }

// StartDirect gives a statement run past GORM's builder
// (sqlstore.ExecDirect) the span the callbacks give the others.
func (p *sqlPlugin) StartDirect(ctx context.Context, _ *gorm.DB, query string) (context.Context, func(error)) {
	if p := trace.SpanContextFromContext(ctx); p.IsValid() && !p.IsSampled() {
		return ctx, nil
	}
	ctx, span := otel.Tracer("github.com/promptd/promptd/sqlstore").Start(ctx, "sql", trace.WithSpanKind(trace.SpanKindClient))
	if !span.IsRecording() {
		return ctx, nil
	}
	return ctx, func(err error) {
		defer span.End()
		op := operation(query)
		span.SetName(op)
		span.SetAttributes(attribute.String("db.system.name", p.system), attribute.String("db.operation.name", op),
			attribute.String("db.query.text", query))
		if err != nil {
			span.SetStatus(codes.Error, "sql error")
		}
	}
}

const spanKey = "promptd:otel_span"

func (*sqlPlugin) Name() string { return "promptd:otel" }

func (p *sqlPlugin) Initialize(db *gorm.DB) error {
	tracer := otel.Tracer("github.com/promptd/promptd/sqlstore")
	system := p.system
	before := func(tx *gorm.DB) {
		// within a request its sampler dropped, a statement's span would be
		// dropped too (the parent-based samplers promptd documents): it is
		// not started, which saves a span and its ids per statement
		if p := trace.SpanContextFromContext(tx.Statement.Context); p.IsValid() && !p.IsSampled() {
			return
		}
		ctx, span := tracer.Start(tx.Statement.Context, "sql", trace.WithSpanKind(trace.SpanKindClient))
		if !span.IsRecording() {
			return
		}
		tx.Statement.Context = ctx
		tx.InstanceSet(spanKey, span)
	}
	after := func(tx *gorm.DB) {
		v, ok := tx.InstanceGet(spanKey)
		if !ok {
			return
		}
		span := v.(trace.Span)
		defer span.End()
		q := tx.Statement.SQL.String()
		op := operation(q)
		span.SetName(op)
		span.SetAttributes(attribute.String("db.system.name", system), attribute.String("db.operation.name", op),
			attribute.String("db.query.text", q))
		if tx.Statement.Table != "" {
			span.SetAttributes(attribute.String("db.collection.name", tx.Statement.Table))
		}
		if err := tx.Error; err != nil && err != gorm.ErrRecordNotFound {
			span.SetStatus(codes.Error, "sql error") // the error's text may quote values
		}
	}
	cb := db.Callback()
	if err := cb.Create().Before("gorm:create").Register("promptd:otel_before_create", before); err != nil {
		return err
	}
	if err := cb.Create().After("gorm:create").Register("promptd:otel_after_create", after); err != nil {
		return err
	}
	if err := cb.Query().Before("gorm:query").Register("promptd:otel_before_query", before); err != nil {
		return err
	}
	if err := cb.Query().After("gorm:query").Register("promptd:otel_after_query", after); err != nil {
		return err
	}
	if err := cb.Update().Before("gorm:update").Register("promptd:otel_before_update", before); err != nil {
		return err
	}
	if err := cb.Update().After("gorm:update").Register("promptd:otel_after_update", after); err != nil {
		return err
	}
	if err := cb.Delete().Before("gorm:delete").Register("promptd:otel_before_delete", before); err != nil {
		return err
	}
	if err := cb.Delete().After("gorm:delete").Register("promptd:otel_after_delete", after); err != nil {
		return err
	}
	if err := cb.Row().Before("gorm:row").Register("promptd:otel_before_row", before); err != nil {
		return err
	}
	if err := cb.Row().After("gorm:row").Register("promptd:otel_after_row", after); err != nil {
		return err
	}
	if err := cb.Raw().Before("gorm:raw").Register("promptd:otel_before_raw", before); err != nil {
		return err
	}
	return cb.Raw().After("gorm:raw").Register("promptd:otel_after_raw", after)
}

// sqlSystem is the semantic conventions' name of GORM's dialect.
func sqlSystem(dialect string) string {
	if dialect == "mysql" {
		return "mysql"
	}
	return dialect
}

// operation is the statement's first word, upper case (SELECT, INSERT...).
func operation(q string) string {
	q = strings.TrimLeft(q, " \t\r\n(")
	if i := strings.IndexAny(q, " \t\r\n("); i > 0 {
		q = q[:i]
	}
	if len(q) > 16 {
		q = q[:16]
	}
	return strings.ToUpper(q)
}
