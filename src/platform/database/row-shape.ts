import type { DataSource, EntityTarget, ObjectLiteral } from 'typeorm';

/**
 * The columns a statement reads into an entity, named once: by the entity's properties. The select list
 * (`s.message_count AS "messageCount"`, a timestamp as Unix ms: parsing timestamp text into Dates was a measurable
 * share of a list's time), the row's type and the mapping back come from the entity's own column metadata, so a
 * column is written in its migration and its entity, and nowhere else.
 */
export class RowShape<E extends ObjectLiteral, K extends keyof E & string> {
  /** For `SELECT ${shape.columns} FROM table alias` and `RETURNING ${shape.columns}`. */
  readonly columns: string;
  private readonly times: ReadonlySet<string>;

  private constructor(
    private readonly make: () => E,
    private readonly fields: readonly K[],
    columns: string,
    times: ReadonlySet<string>,
  ) {
    this.columns = columns;
    this.times = times;
  }

  /** The shape of `fields` of `entity`, read from the table aliased `alias`. */
  static of<E extends ObjectLiteral, K extends keyof E & string>(
    dataSource: DataSource,
    entity: EntityTarget<E> & (new () => E),
    alias: string,
    fields: readonly K[],
  ): RowShape<E, K> {
    const metadata = dataSource.getMetadata(entity);
    const times = new Set<string>();
    const columns = fields.map((field) => {
      const column = metadata.findColumnWithPropertyName(field);
      if (!column) throw new Error(`RowShape: ${metadata.name} has no column for ${field}`);
      const name = `${alias}.${column.databaseName}`;
      if (column.type !== 'timestamptz') return `${name} AS "${field}"`;
      times.add(field);
      return `(extract(epoch from ${name}) * 1000)::float8 AS "${field}"`;
    });
    return new RowShape(() => new entity(), fields, columns.join(', '), times);
  }

  /** The entity (only these fields set) from a row this shape selected; other columns of the row are left out. */
  from(row: Record<string, unknown>): Pick<E, K> {
    const entity = this.make() as Record<string, unknown>;
    for (const field of this.fields) {
      const value = row[field];
      entity[field] = this.times.has(field) ? (value === null || value === undefined ? null : new Date(value as number)) : value;
    }
    return entity as Pick<E, K>;
  }
}
