// slotOf agrees with Redis Cluster's own CLUSTER KEYSLOT, key for key: the grouping of subjects per slot depends on it.
import { startRedisCluster, type RedisClusterHandle } from '@floodgate/testing';
import { slotOf } from '../src/stores/redis/slot';
import { subjectKey } from '../src';

let cluster: RedisClusterHandle;
beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3 });
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

it('gives the slot CLUSTER KEYSLOT gives, for subject keys, hash tags, empty tags and non-ASCII keys', async () => {
  const keys = [
    ...Array.from({ length: 200 }, (_, i) => `${subjectKey('fg', 'GET /', `ip:198.18.0.${i}`)}:default.swc`),
    'foo',
    '{user1000}.following',
    '{}foo',
    'a{}b{c}',
    'a{b}{c}',
    'no}{tag',
    'héllo{ü}',
    'ключ',
    '',
  ];
  const client = cluster.nodes[0].client();
  try {
    for (const key of keys) expect({ key, slot: slotOf(key) }).toEqual({ key, slot: Number(await client.call('CLUSTER', 'KEYSLOT', key)) });
  } finally {
    client.disconnect();
  }
});
