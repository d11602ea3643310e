package impls

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/locktest/locktest/lock"
)

func init() {
	Register(Design{
		Name: "etcd-txn",
		Description: "etcd with the protected data in etcd: every read and write is a transaction guarded on the " +
			"lock key still existing with our create revision (Jepsen's lock-etcd-set)",
		Fenced:       true,
		GuardsWrites: true,
		Binaries:     etcdBinaries,
		Roles:        etcdRoles,
		Checkpoints:  []string{lock.CheckpointWaiting},
		Deploy:       deployEtcd,
		New: func(cfg lock.Config) (lock.Lock, error) {
			l, err := newEtcdLock(cfg, true)
			return etcdTxn{l}, err
		},
	})
}

// etcdDataPrefix is where etcd-txn keeps the protected counters.
const etcdDataPrefix = "/locktest/data/"

// etcdTxn is the etcd lock whose holder touches the protected data only in
// a transaction that also checks, on the server and in the same atomic
// step, that its lock key still exists with the create revision it was
// granted (the grant's token). A key once deleted (released, or expired
// with its lease) never comes back with that revision, so a check that
// passes proves the lock was held without a gap since the grant.
type etcdTxn struct{ *etcdLock }

// owns compares the key this client was granted for lock key with token;
// it fails when this client holds no grant for it.
func (l etcdTxn) owns(key string, token int64) (clientv3.Cmp, error) {
	m := l.held[key]
	if m == nil || createRevision(m) != token {
		return clientv3.Cmp{}, lock.ErrStale
	}
	return clientv3.Compare(clientv3.CreateRevision(m.Key()), "=", token), nil
}

func (l etcdTxn) Read(ctx context.Context, key string, token int64) (int64, error) {
	get := clientv3.OpGet(etcdDataPrefix + key)
	var resp *clientv3.TxnResponse
	var err error
	if token == 0 {
		resp, err = l.cli.Txn(ctx).Then(get).Commit()
	} else {
		cmp, oerr := l.owns(key, token)
		if oerr != nil {
			return 0, oerr
		}
		resp, err = l.cli.Txn(ctx).If(cmp).Then(get).Commit()
	}
	if err != nil {
		return 0, fmt.Errorf("guarded read: %w", err)
	}
	if !resp.Succeeded {
		return 0, lock.ErrStale
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil {
		return 0, lock.Definite(fmt.Errorf("guarded read: counter %q: %w", kvs[0].Value, err))
	}
	return v, nil
}

func (l etcdTxn) Write(ctx context.Context, key string, v, token int64) error {
	cmp, err := l.owns(key, token)
	if err != nil {
		return err
	}
	resp, err := l.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(etcdDataPrefix+key, strconv.FormatInt(v, 10))).Commit()
	if err != nil {
		return fmt.Errorf("guarded write: %w", err)
	}
	if !resp.Succeeded {
		return lock.ErrStale
	}
	return nil
}
