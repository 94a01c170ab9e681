// A table with a caption for screen readers, or a sentence when it has no rows. Tables that are
// polled give each row a key, so a row keeps its focus and open state when the list changes.
import type { ComponentChildren } from "preact";

export function Table(props: { caption: string; headings: string[]; rows: ComponentChildren[][]; empty: string; rowKeys?: string[] }) {
  if (!props.rows.length) return <p class="empty">{props.empty}</p>;
  return (
    // A table wider than the screen scrolls inside its wrapper, which the keyboard can then reach.
    <div class="table-wrap" tabIndex={0} role="region" aria-label={`${props.caption} (table)`}>
      <table>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            {props.headings.map((heading) => (
              <th scope="col">{heading}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((cells, index) => (
            <tr key={props.rowKeys?.[index]}>
              {cells.map((cell) => (
                <td>{cell}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
