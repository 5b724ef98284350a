package extract

import (
	"context"
	"fmt"

	"github.com/kandev/kandev-extract/models"
)

// OpenPostgres opens a PostgreSQL Kandev store.
func OpenPostgres(ctx context.Context, dsn string) (models.Source, error) {
	return nil, fmt.Errorf("PostgreSQL sources are not supported yet")
}
