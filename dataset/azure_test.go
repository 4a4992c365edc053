package dataset_test

import (
	"testing"

	"github.com/lancerdb/lancer/internal/azuretest"
)

// TestDatasetOnAzure: the dataset life cycle of testDatasetOnCloud on
// Azurite, configured the way Lance users point object_store at it.
func TestDatasetOnAzure(t *testing.T) {
	base := azuretest.Start(t)
	t.Setenv("AZURITE_BLOB_STORAGE_URL", base)
	testDatasetOnCloud(t, "az://ctr/db/t.lance", map[string]string{"azure_storage_use_emulator": "true"})
}
