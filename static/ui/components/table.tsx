// A table with a caption for screen readers, or a sentence when it has no rows. Tables that are
// polled give each row a key, so a row keeps its focus and open state when the list changes.
// On a phone each row is shown as a card of "heading: value" lines (static/app.css), so no table
// is read by scrolling sideways; the roles are explicit because some browsers drop a table's
// semantics once CSS stops displaying it as a table.
import type { ComponentChildren } from "preact";

export function Table(props: { caption: string; headings: string[]; rows: ComponentChildren[][]; empty: string; rowKeys?: string[] }) {
  if (!props.rows.length) return <p class="empty">{props.empty}</p>;
  return (
    // A table wider than the screen scrolls inside its wrapper, which the keyboard can then reach.
    <div class="table-wrap" tabIndex={0} role="region" aria-label={`${props.caption} (table)`}>
      <table class="data-table" role="table">
        <caption class="visually-hidden">{props.caption}</caption>
        <thead role="rowgroup">
          <tr role="row">
            {props.headings.map((heading) => (
              <th scope="col" role="columnheader">
                {heading}
              </th>
            ))}
          </tr>
        </thead>
        <tbody role="rowgroup">
          {props.rows.map((cells, index) => (
            <tr role="row" key={props.rowKeys?.[index]}>
              {cells.map((cell, column) => (
                <td role="cell" data-label={props.headings[column]}>
                  <div class="cell-value">{cell}</div>
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
