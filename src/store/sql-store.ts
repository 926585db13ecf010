/**
 * `SqlStore`: the SQL classes (session state, ledger, index, the tenant's learning, the extraction
 * cache) over one SQL port, composed, with retention's sweep (retained.ts). `SqliteStore` and
 * `PostgresStore` are this class over their engine's port; a store of one's own over another SQL
 * engine can be too.
 */
import { RetainedStore, type RetainedStoreOptions } from "./retained.ts";
import { type Dialect, SQLITE, type SqlPort } from "./sql.ts";
import { SqlExtractionCache } from "./sql-extractions.ts";
import { SqlIndex } from "./sql-index.ts";
import { type BodyBucket, SqlLedger } from "./sql-ledger.ts";
import { SqlSessionState } from "./sql-session.ts";
import { SqlTenantLearning } from "./sql-tenant.ts";
import { DEFAULT_RETENTION_SECONDS } from "./state.ts";
import { TenantCache } from "./tenant-cache.ts";

export interface SqlStoreOptions extends RetainedStoreOptions {
  /** Every table's name starts with it (default `eo_`): the tables can live beside others. */
  prefix?: string | undefined;
  /**
   * Where bodies over `inlineMaxChars` go (an S3-compatible bucket, R2: see `BodyBucket`); default:
   * every body in SQL.
   */
  bucket?: BodyBucket | undefined;
  inlineMaxChars?: number | undefined;
  /**
   * Read the tenant's learning through the process's cache (a database over the network: it is
   * never on a turn's path), rather than directly (a local file answers at once). Default false.
   */
  cacheTenantLearning?: boolean | undefined;
}

/** The SQL classes over one port, composed, with retention (see above). */
export class SqlStore extends RetainedStore {
  /** The session state (a host's alarm, or a test, may read it). */
  readonly state: SqlSessionState;

  constructor(sql: SqlPort, dialect: Dialect = SQLITE, options: SqlStoreOptions = {}) {
    const prefix = options.prefix ?? "eo_";
    const now = options.now ?? Date.now;
    const retentionSeconds = options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS;
    const state = new SqlSessionState(sql, {
      prefix,
      dialect,
      now,
      retentionSeconds,
    });
    super(
      {
        ...options,
        now,
        sessions: state,
        ledger: new SqlLedger(sql, {
          prefix,
          dialect,
          bucket: options.bucket,
          inlineMaxChars: options.inlineMaxChars,
        }),
        index: new SqlIndex(sql, { prefix, dialect }),
        tenants: options.cacheTenantLearning
          ? new TenantCache(new SqlTenantLearning(sql, { prefix, dialect }), { now })
          : new SqlTenantLearning(sql, { prefix, dialect }),
      },
      state,
      new SqlExtractionCache(sql, { prefix, now, retentionSeconds }),
    );
    this.state = state;
  }
}
