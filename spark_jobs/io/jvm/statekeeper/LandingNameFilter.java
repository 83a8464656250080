package statekeeper;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;

/**
 * The file listing's filter (``mapreduce.input.pathFilter.class``, which Spark's file index
 * applies to every file it lists): a landing file whose name holds one of {@link #REFUSED} is
 * left out, never planned into a batch.
 *
 * <p>Why: Spark's file source reads a batch's files by their paths, with globbing off. A path
 * with a glob character ({@code [ ] { } ? * \}) still takes the glob branch of Spark's path
 * check, which then hands back every path of the batch once more: each other file of that batch
 * was read twice, and its rows written twice, exit 0 ({@code docs/jobs.md}, "Landing files").
 * A name with {@code :} is listed but cannot be opened (Hadoop's checksum path for it is no
 * valid URI), so its batch fails every time. Left out, such a file is named by the run's
 * "never reads" line: rename it and it is read.
 *
 * <p>The characters are {@code spark_jobs/contract/paths.py}'s {@code UNREADABLE_NAME_CHARS},
 * which every Python check of what a run reads applies; a unit test holds the two equal.
 */
public final class LandingNameFilter implements PathFilter {
    static final String REFUSED = "[]{}?*\\:";

    @Override
    public boolean accept(Path path) {
        String name = path.getName();
        for (int i = 0; i < name.length(); i++) {
            if (REFUSED.indexOf(name.charAt(i)) >= 0) {
                return false;
            }
        }
        return true;
    }
}
