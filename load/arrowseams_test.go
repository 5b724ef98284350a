package load

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The writer seeds arrow-go's dictionary encoder with a whole dictionary
// through two methods arrow-go does not declare in its interfaces
// (dictionaryEncoder). Should arrow-go rename or drop one, the writer would
// silently take its slower, generic path; this test fails instead.
func TestArrowGoSeamsStillMatch(t *testing.T) {
	t.Parallel()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},        // dictionary encoded
		{Name: "tool_call_id", Type: arrow.BinaryTypes.String, Nullable: false}, // plain (highCardinality)
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	o := defaultWriterOptions()
	props := writerProperties(schema, "test", o)
	arrowProps := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithCoerceTimestamps(arrow.Microsecond))
	pqSchema, err := pqarrow.ToParquet(schema, props, arrowProps)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := file.NewParquetWriter(&buf, pqSchema.Root(), file.WithWriterProps(props))
	defer w.Close()
	rg, err := w.AppendBufferedRowGroupChecked()
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range schema.Fields() {
		cw, err := rg.Column(i)
		if err != nil {
			t.Fatal(err)
		}
		enc := cw.CurrentEncoder()
		if dictionaryFor(f) {
			if _, ok := enc.(dictionaryEncoder); !ok {
				t.Errorf("%s: the dictionary encoder %T has no PutDictionary/NumEntries", f.Name, enc)
			}
		}
	}
	if !dictionaryFor(schema.Field(0)) || dictionaryFor(schema.Field(1)) {
		t.Fatal("the test's columns no longer exercise both encodings")
	}
}
