package redis

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A master counts only the replicas in sync: one connected but still in its first full sync (a cluster
// just formed, a replica restarted) has none of the data, so a replicated step does not wait for it.
func TestReplicasInSyncCountsOnlyOnlineReplicas(t *testing.T) {
	for _, tt := range []struct {
		name string
		info string
		want int
	}{
		{"no replica", "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n", 0},
		{"one in sync", "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n" +
			"slave0:ip=127.0.0.1,port=7004,state=online,offset=1403,lag=0\r\nmaster_repl_offset:1403\r\n", 1},
		{"one waiting for its snapshot", "# Replication\r\nrole:master\r\nconnected_slaves:1\r\n" +
			"slave0:ip=127.0.0.1,port=7004,state=wait_bgsave,offset=0,lag=0\r\n", 0},
		{"one receiving its snapshot, one in sync", "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n" +
			"slave0:ip=127.0.0.1,port=7004,state=send_bulk,offset=0,lag=0\r\n" +
			"slave1:ip=127.0.0.1,port=7005,state=online,offset=88,lag=1\r\n", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := replicasInSync(tt.info)
			require.NoError(t, err)
			assert.Equal(t, tt.want, n)
		})
	}
	_, err := replicasInSync("# Replication\r\nrole:master\r\n")
	assert.Error(t, err, "an answer without connected_slaves is not read as no replica")
}
